#pragma once
// What one downstream call produced: a JSON object, or why there is none. Calls never throw for I/O
// problems; they return one of these.

#include "gateway/aggregate/json_object.hpp"
#include "gateway/core/duration.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace gateway {

enum class call_outcome : std::uint8_t {
  ok,            // 2xx with a JSON object
  timeout,       // the call's own timeout or the request's deadline passed
  error,         // connect refused, reset, bad status, bad body, ...
  cancelled,     // the request was abandoned (client gone, shutdown)
  rejected,      // refused locally before any I/O (no capacity)
  circuit_open,  // refused locally before any I/O: the downstream's circuit breaker is open
  stale,         // failed, and its last good answer for the same target is served (stale_if_error)
};
inline constexpr std::size_t call_outcome_count = 7;

std::string_view to_string(call_outcome outcome);

struct call_result {
  call_outcome outcome = call_outcome::error;
  const char* detail = "";  // short static reason, e.g. "connect refused", "status 503"
  unsigned status = 0;      // HTTP status when one was received
  json_object_text body;    // the JSON object when outcome == ok
  clock::duration latency{};
  // The downstream was reached: a connection to it used or opened, a query sent. False when the call
  // ended while it waited for something local (a pool connection, a database permit): no fault of the
  // downstream's, so its circuit breaker does not count it.
  bool contacted = true;
  std::uint32_t fresh_for = 0;  // seconds the answer may be served from a cache (HTTP Cache-Control)
  // The answer's fields kept for the client (the call's response_headers; see response_parser::capture),
  // "Name: value\r\n" each; empty when the call's route asks for none. From the cache: those stored with
  // the answer.
  std::string headers;
  bool from_cache = false;  // served from the downstream's cache without a call ...
  std::uint32_t age = 0;    // ... this many whole seconds after it was received

  bool ok() const { return outcome == call_outcome::ok; }
  // An answer to merge: a fresh one, or a stale one (degraded).
  bool has_body() const { return outcome == call_outcome::ok || outcome == call_outcome::stale; }
};

}  // namespace gateway
