#include "gateway/observe/otlp_encoding.hpp"

#include "gateway/observe/protobuf_writer.hpp"

#include <type_traits>

namespace gateway {

namespace {

// Field numbers, by message (opentelemetry-proto v1).
namespace export_request {
constexpr std::uint32_t resource_spans = 1;
}
namespace resource_spans {
constexpr std::uint32_t resource = 1, scope_spans = 2;
}
namespace resource {
constexpr std::uint32_t attributes = 1;
}
namespace scope_spans {
constexpr std::uint32_t scope = 1, spans = 2;
}
namespace scope {
constexpr std::uint32_t name = 1, version = 2;
}
namespace span_fields {
constexpr std::uint32_t trace_id = 1, span_id = 2, trace_state = 3, parent_span_id = 4, name = 5, kind = 6,
                        start_time_unix_nano = 7, end_time_unix_nano = 8, attributes = 9, status = 15;
}
namespace status {
constexpr std::uint32_t message = 2, code = 3;
}
namespace key_value {
constexpr std::uint32_t key = 1, value = 2;
}
namespace any_value {
constexpr std::uint32_t string_value = 1, bool_value = 2, int_value = 3, double_value = 4;
}

constexpr std::string_view scope_name = "gateway";

// A KeyValue. AnyValue's fields are a oneof: written even when they hold their type's default.
void write_attribute(protobuf_writer& w, std::uint32_t field, std::string_view key,
                     const attribute_value& v) {
  const auto kv = w.open(field);
  w.bytes_field(key_value::key, key);
  const auto any = w.open(key_value::value);
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          w.bytes_field(any_value::string_value, x);
        } else if constexpr (std::is_same_v<T, bool>) {
          w.bool_field(any_value::bool_value, x);
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          w.int64_field(any_value::int_value, x);
        } else {
          static_assert(std::is_same_v<T, double>);
          w.double_field(any_value::double_value, x);
        }
      },
      v);
  w.close(any);
  w.close(kv);
}

// A Span. Fields at their proto3 default (no parent, no trace state, unset status) are left out.
void write_span(protobuf_writer& w, const trace_record& record, const span& s) {
  namespace f = span_fields;
  const auto mark = w.open(scope_spans::spans);
  w.bytes_field(f::trace_id, record.trace);
  w.bytes_field(f::span_id, s.id);
  if (!record.tracestate.empty()) w.bytes_field(f::trace_state, record.tracestate);
  if (!is_zero(s.parent)) w.bytes_field(f::parent_span_id, s.parent);
  w.bytes_field(f::name, s.name);
  w.uint64_field(f::kind, static_cast<std::uint64_t>(s.kind));
  w.fixed64_field(f::start_time_unix_nano, s.start_ns);
  w.fixed64_field(f::end_time_unix_nano, s.end_ns);
  for (const auto& a : s.attributes) write_attribute(w, f::attributes, a.key, a.value);
  if (s.status != span_status::unset || !s.status_message.empty()) {
    const auto st = w.open(f::status);
    if (!s.status_message.empty()) w.bytes_field(status::message, s.status_message);
    if (s.status != span_status::unset) w.uint64_field(status::code, static_cast<std::uint64_t>(s.status));
    w.close(st);
  }
  w.close(mark);
}

}  // namespace

std::string encode_export_request(std::span<const trace_record> records, std::string_view service_name) {
  protobuf_writer w;
  const auto rs = w.open(export_request::resource_spans);
  {
    const auto res = w.open(resource_spans::resource);
    write_attribute(w, resource::attributes, "service.name", std::string(service_name));
    w.close(res);
  }
  const auto ss = w.open(resource_spans::scope_spans);
  {
    const auto sc = w.open(scope_spans::scope);
    w.bytes_field(scope::name, scope_name);
    w.bytes_field(scope::version, GATEWAY_VERSION);
    w.close(sc);
  }
  for (const auto& record : records) {
    write_span(w, record, record.server);
    for (const auto& s : record.spans) write_span(w, record, s);
  }
  w.close(ss);
  w.close(rs);
  return w.take();
}

}  // namespace gateway
