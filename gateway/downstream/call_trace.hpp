#pragma once
// The spans of one call of a traced request, in the request's trace_record. The request handler makes
// the call's span before the fan-out and ends it after (end()); while the call runs, the downstream adds
// what only it knows:
// - an HTTP call, a client span per attempt (the first, each retry, a hedge) under the call's span, which
//   is then internal. Each attempt sends its own span's traceparent, so the downstream's spans nest under
//   the attempt that reached it.
// - a SQL call, its wait for a database permit; its span is then the client span (a call has one query,
//   never retried).
// A call that makes no attempt (an open circuit breaker, an answer from the cache or a coalesced one, no
// time left) has its span alone.
//
// Used on the request's I/O thread only, and only until the call reports: an HTTP call ends the spans of
// its attempts still running when it reports (they are cancelled then) and touches the trace no more. A
// call of a request that is not traced has none (call_request::trace is null): the call pays one test of
// a null pointer. Times: the spans are placed on the system clock from one reading of both clocks made
// with the call's span, so an attempt's start and end cost no clock reading of their own.

#include "gateway/config/config.hpp"
#include "gateway/downstream/call_result.hpp"
#include "gateway/runtime/duration.hpp"
#include "gateway/trace/trace_record.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gateway {

class circuit_breaker;

class call_trace {
 public:
  // Adds the span of `call` under `record`'s server span, started at `now` on the gateway's clock, which
  // is `now_ns` on the system clock. `record` and `call` must outlive this.
  call_trace(trace_record& record, const call_settings& call, clock::time_point now, std::uint64_t now_ns);

  // The traceparent of the call's own span (sent by a call that has no attempts of its own).
  std::string_view traceparent() const { return traceparent_.view(); }

  // HTTP: the call's `url.full` (span_attributes::full_url), for its attempts' spans; before the first.
  void set_url(std::string url) { url_ = std::move(url); }
  // An attempt starts at `now` on `to` (a hedge beside the first attempt, when `hedge`): its client span,
  // numbered from 1 in start order. Returns the attempt's handle for end_attempt(); `traceparent` gets
  // what the attempt sends.
  std::size_t begin_attempt(clock::time_point now, bool hedge, const boost::asio::ip::tcp::endpoint& to,
                            traceparent_text& traceparent);
  // The attempt ended at `now` with `result`; null: it was cancelled because the call reported (another
  // attempt answered, or the call ended).
  void end_attempt(std::size_t attempt, clock::time_point now, const call_result* result);

  // A call of a graph (`after`) started at `begun`, `wait` after the fan-out, once the calls named in
  // `after` had answered: its span starts then and says what it waited for.
  void started_after(clock::time_point begun, clock::duration wait, const std::vector<std::string>& after);

  // SQL: how long the call waited for a permit of the database's semaphore (whether it got one or not).
  void permit_waited(clock::duration wait);

  // Ends the call's span with its result, after the fan-out: `to` is its downstream, `breaker` that
  // downstream's circuit breaker (null: none).
  void end(const call_result& result, const downstream_settings& to, const circuit_breaker* breaker);

 private:
  std::uint64_t unix_ns(clock::time_point t) const;
  span& call_span() { return record_->spans[span_]; }

  trace_record* record_;
  std::size_t span_;  // the call's span in record_->spans
  std::string_view method_;
  clock::time_point anchor_;       // the call span's start, on the gateway's clock ...
  std::uint64_t anchor_ns_;        // ... and on the system clock
  std::uint64_t last_end_ns_ = 0;  // the latest end of an attempt
  traceparent_text traceparent_;
  std::string url_;
  unsigned attempts_ = 0;
};

}  // namespace gateway
