#include "gateway/downstream/call_trace.hpp"

#include "gateway/downstream/circuit_breaker.hpp"
#include "gateway/trace/span_attributes.hpp"

#include <algorithm>
#include <chrono>

namespace gateway {

namespace attr = span_attributes;

call_trace::call_trace(trace_record& record, const call_settings& call, clock::time_point now,
                       std::uint64_t now_ns)
    : record_(&record), span_(record.spans.size()), method_(call.method), anchor_(now), anchor_ns_(now_ns) {
  // Internal until end() knows better (a SQL call's span is the client span).
  const auto& s = record.add_span(call.name, span_kind::internal, record.server.id, now_ns);
  traceparent_ = record.outgoing(s);
}

std::uint64_t call_trace::unix_ns(clock::time_point t) const {
  const auto since = std::chrono::duration_cast<std::chrono::nanoseconds>(t - anchor_).count();
  return since <= 0 ? anchor_ns_ : anchor_ns_ + static_cast<std::uint64_t>(since);
}

std::size_t call_trace::begin_attempt(clock::time_point now, bool hedge,
                                      const boost::asio::ip::tcp::endpoint& to,
                                      traceparent_text& traceparent) {
  const auto index = record_->spans.size();
  auto& s = record_->add_span(std::string(method_), span_kind::client, call_span().id, unix_ns(now));
  const auto number = ++attempts_;
  s.set(attr::http_request_method, method_);
  s.set(attr::url_full, url_);
  s.set(attr::server_address, to.address().to_string());
  s.set(attr::server_port, to.port());
  s.set(attr::attempt, number);
  if (number > 1) s.set(attr::http_request_resend_count, number - 1);
  if (hedge) s.set(attr::hedge, true);
  traceparent = record_->outgoing(s);
  return index;
}

void call_trace::end_attempt(std::size_t attempt, clock::time_point now, const call_result* result) {
  auto& s = record_->spans[attempt];
  s.end_ns = unix_ns(now);
  last_end_ns_ = std::max(last_end_ns_, s.end_ns);
  if (result == nullptr) {  // lost to another attempt, or ended with its call: not a failure of its own
    s.set(attr::outcome, to_string(call_outcome::cancelled));
    return;
  }
  s.set(attr::outcome, outcome_label(result->label_index()));
  if (result->status != 0) s.set(attr::http_response_status_code, result->status);
  if (result->ok()) {
    s.status = span_status::ok;
  } else {
    s.fail(result->detail);
  }
}

void call_trace::started_after(clock::time_point begun, clock::duration wait,
                               const std::vector<std::string>& after) {
  auto& s = call_span();
  s.start_ns = unix_ns(begun);
  std::string names;
  for (const auto& name : after) names += (names.empty() ? "" : ",") + name;
  s.set(attr::after, std::move(names));
  s.set(attr::after_wait_ms, std::chrono::duration<double, std::milli>(wait).count());
}

void call_trace::permit_waited(clock::duration wait) {
  call_span().set(attr::semaphore_wait_ms, std::chrono::duration<double, std::milli>(wait).count());
}

void call_trace::end(const call_result& result, const downstream_settings& to,
                     const circuit_breaker* breaker) {
  auto& s = call_span();
  // The fan-out measures a call's latency from its own start, a moment after this span's: an attempt
  // that ended with the call must not end after it.
  s.end_ns =
      std::max(s.start_ns + static_cast<std::uint64_t>(std::chrono::nanoseconds(result.latency).count()),
               last_end_ns_);
  s.set(attr::call, s.name);
  s.set(attr::downstream, to.name);
  if (to.kind == downstream_kind::sql) {
    s.kind = span_kind::client;
    s.set(attr::db_system, to.sql.driver == sql_driver::postgres ? "postgresql" : "sqlite");
  }
  s.set(attr::outcome, outcome_label(result.label_index()));
  s.set(attr::degraded, !result.ok());
  if (result.status != 0) s.set(attr::http_response_status_code, result.status);
  if (breaker != nullptr) s.set(attr::breaker_state, to_string(breaker->current()));
  if (result.ok()) {
    s.status = span_status::ok;
  } else {
    s.fail(result.detail);
  }
}

}  // namespace gateway
