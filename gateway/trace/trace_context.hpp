#pragma once
// W3C trace context (https://www.w3.org/TR/trace-context/): trace and span ids, the `traceparent` and
// `tracestate` fields, and the head sampling decision. Pure functions; ids come from a per-thread
// generator, so any thread may make them without locking.

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gateway {

using trace_id = std::array<std::uint8_t, 16>;
using span_id = std::array<std::uint8_t, 8>;

// Random ids from this thread's generator (runtime/thread_random.hpp); never
// all-zero, which W3C reserves for "invalid".
trace_id new_trace_id();
span_id new_span_id();

template <std::size_t N>
bool is_zero(const std::array<std::uint8_t, N>& id) {
  for (auto b : id) {
    if (b != 0) return false;
  }
  return true;
}

// Lowercase hex, as trace context writes ids.
std::string to_hex(const trace_id& id);
std::string to_hex(const span_id& id);

// An incoming `traceparent`: "00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>".
struct traceparent {
  trace_id trace{};
  span_id parent{};
  std::uint8_t flags = 0;
  bool sampled() const { return (flags & 0x01) != 0; }
};

// Parses a `traceparent` field value; nullopt for anything invalid: uppercase or non-hex digits, version
// ff, an all-zero trace or parent id, version 00 with anything after the flags. A later version is read
// by its version-00 prefix when what follows the flags starts with '-' (the specification's rule for
// versions this code does not know).
std::optional<traceparent> parse_traceparent(std::string_view value);

// The outgoing `traceparent` of a client span (version 00, 55 characters), without allocating.
struct traceparent_text {
  std::array<char, 55> chars{};
  std::string_view view() const { return {chars.data(), chars.size()}; }
};
traceparent_text format_traceparent(const trace_id& trace, const span_id& span, bool sampled);

// An incoming `tracestate` kept as it came (it is opaque to the gateway and passed on unchanged), or ""
// when it is longer than the 512 bytes a vendor must propagate or holds bytes no list member may hold
// (controls, non-ASCII).
std::string_view accepted_tracestate(std::string_view value);

// Parent-based ratio sampling at the head of a request. With a parent, its sampled flag decides. Without
// one, the trace id does: sampled when its rightmost 7 bytes (56 random bits, as W3C trace context level
// 2 defines them), read as a big-endian number, are below ratio * 2^56. Every service deciding so at
// the same ratio keeps the same traces. `ratio` is within [0, 1]: 0 keeps none, 1 keeps all.
bool head_sampled(const std::optional<traceparent>& parent, const trace_id& trace, double ratio);

// Nanoseconds since the Unix epoch, as OTLP writes times.
inline std::uint64_t unix_nanos(std::chrono::system_clock::time_point t) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}
inline std::uint64_t unix_nanos_now() {
  return unix_nanos(std::chrono::system_clock::now());
}

}  // namespace gateway
