#include "gateway/trace/trace_record.hpp"

namespace gateway {

void span::set(std::string_view key, std::string value) {
  attributes.push_back({key, std::move(value)});
}

void span::set(std::string_view key, double value) {
  attributes.push_back({key, value});
}

void span::set(std::string_view key, bool value) {
  attributes.push_back({key, value});
}

void span::set_integer(std::string_view key, std::int64_t value) {
  attributes.push_back({key, value});
}

trace_record begin_trace(std::string_view traceparent_value, std::string_view tracestate_value,
                         double sample_ratio, std::uint64_t start_ns) {
  const auto parent = parse_traceparent(traceparent_value);
  trace_record record;
  record.trace = parent ? parent->trace : new_trace_id();
  if (parent) record.tracestate = accepted_tracestate(tracestate_value);
  record.sampled = head_sampled(parent, record.trace, sample_ratio);
  record.server.id = new_span_id();
  if (parent) record.server.parent = parent->parent;
  record.server.kind = span_kind::server;
  record.server.start_ns = start_ns;
  return record;
}

}  // namespace gateway
