#pragma once
// What one downstream call produced: a JSON object, or why there is none. Calls never throw for I/O
// problems; they return one of these.

#include "gateway/codec/json_object.hpp"
#include "gateway/runtime/duration.hpp"

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
  dependency,    // not sent: a call it needs (`after`) failed, or its answer lacks a value this call uses
  skipped,       // not sent, by design: its `when` is false (or a call it needs was skipped); left out
};
inline constexpr std::size_t call_outcome_count = 9;

std::string_view to_string(call_outcome outcome);

// What kind of failure an `error` outcome was: a status the call cannot use, an answer that is not a JSON
// object or is too large, a connection refused, reset or closed, a TLS handshake that failed, or other.
enum class call_error : std::uint8_t {
  none,
  status_4xx,
  status_5xx,  // and any other status that is not 2xx
  invalid_body,
  too_large,
  refused,
  reset,
  tls,
  other,
  // With outcome timeout (never error, so no label of its own): the connection was not made in time (its
  // connect_timeout, the TLS handshake included).
  connect_timeout,
};

// The outcome as metrics and logs name it: the outcome, but an error by its kind ("status_5xx", "reset",
// ...; "error" for other errors). Numbered 0 .. outcome_label_count - 1 by outcome_label_index.
inline constexpr std::size_t outcome_label_count = 16;
std::size_t outcome_label_index(call_outcome outcome, call_error error);
std::string_view outcome_label(std::size_t index);

struct call_result {
  call_outcome outcome = call_outcome::error;
  call_error error = call_error::none;  // the kind of failure when outcome == error
  const char* detail = "";              // short static reason, e.g. "connect refused", "status 503"
  unsigned status = 0;                  // HTTP status when one was received
  json_object_text body;                // the JSON object when outcome == ok
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
  bool sets_cookie = false;  // `headers` holds a Set-Cookie: meant for this call's client alone
  // The answer may be shared with other calls of its key (downstream/share_key.hpp): false when its Vary
  // names "*" or a field the key leaves out (freshness.hpp, varies_beyond_key).
  bool shareable = true;
  bool truncated = false;   // a for_each call: it ran on the first max_items elements of a longer array
  std::uint16_t items = 0;  // a for_each call: how many elements it ran (their results follow the calls')
  bool from_cache = false;  // served from the downstream's cache without a call ...
  std::uint32_t age = 0;    // ... this many whole seconds after it was received

  bool ok() const { return outcome == call_outcome::ok; }
  std::size_t label_index() const { return outcome_label_index(outcome, error); }
  // An answer to merge: a fresh one, or a stale one (degraded).
  bool has_body() const { return outcome == call_outcome::ok || outcome == call_outcome::stale; }
  // Neither an answer nor a failure: the call was left out on purpose (`when`).
  bool skipped() const { return outcome == call_outcome::skipped; }
};

// One phrase for why a call was not ok: the status a downstream answered with when that status was the
// failure ("status 503"), else its detail ("connect refused", "deadline", ...), else its outcome label.
std::string failure_detail(const call_result& r);

// What the access log keeps of a call: its outcome (outcome_label_index), status (0: none) and latency.
// A call answered from the cache (call_result::from_cache) is `cached`, with the stored answer's status
// and its age.
struct call_brief {
  std::uint8_t outcome = 0;
  std::uint16_t status = 0;
  std::uint32_t latency_us = 0;
  bool cached = false;
  std::uint32_t age = 0;  // seconds, when cached
};

inline call_brief brief_of(const call_result& r) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(r.latency).count();
  return {static_cast<std::uint8_t>(r.label_index()),
          static_cast<std::uint16_t>(r.status < 1000 ? r.status : 0),
          static_cast<std::uint32_t>(us < 0              ? 0
                                     : us > 0xffffffffLL ? 0xffffffffLL
                                                         : us),
          r.from_cache, r.age};
}

}  // namespace gateway
