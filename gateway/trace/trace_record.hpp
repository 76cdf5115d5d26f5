#pragma once
// What one finished request leaves for tracing: plain data, built by the request's own thread and then
// moved whole into the tracer (tracing.hpp). One server span (the gateway's handling of the request)
// and the spans under it: per call an internal span with a client span per attempt (call_trace.hpp), or
// one client span (a SQL call, a pass-through exchange). Nothing here is shared or locked.

#include "gateway/trace/trace_context.hpp"

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace gateway {

// OTLP's SpanKind values.
enum class span_kind : std::uint8_t { internal = 1, server = 2, client = 3 };

// OTLP's Status.code values.
enum class span_status : std::uint8_t { unset = 0, ok = 1, error = 2 };

using attribute_value = std::variant<std::string, std::int64_t, double, bool>;

struct span_attribute {
  // A name with static storage: one of the constants in span_attributes.hpp, or a string literal. The
  // record crosses to the export thread, so a key must never point into request memory.
  std::string_view key;
  attribute_value value;
};

struct span {
  span_id id{};
  span_id parent{};  // all-zero: none (a root server span)
  std::string name;
  span_kind kind = span_kind::internal;
  std::uint64_t start_ns = 0;  // system clock, nanoseconds since the Unix epoch (unix_nanos)
  std::uint64_t end_ns = 0;
  span_status status = span_status::unset;
  std::string status_message;  // only with span_status::error
  std::vector<span_attribute> attributes;

  // Adds an attribute (no check for a repeated key: the caller sets each once). Text values are copied;
  // an integer is stored as int64 (an unsigned value above its range wraps).
  // Out of line: inlined into callers, the variant's construction trips GCC 12's -Wmaybe-uninitialized.
  void set(std::string_view key, std::string value);
  void set(std::string_view key, std::string_view value) { set(key, std::string(value)); }
  void set(std::string_view key, const char* value) { set(key, std::string(value)); }
  template <std::integral T>
  requires(!std::same_as<T, bool>) void set(std::string_view key, T value) {
    set_integer(key, static_cast<std::int64_t>(value));
  }
  void set(std::string_view key, double value);
  void set(std::string_view key, bool value);
  void set_integer(std::string_view key, std::int64_t value);

  void fail(std::string message) {
    status = span_status::error;
    status_message = std::move(message);
  }
};

struct trace_record {
  trace_id trace{};
  std::string tracestate;  // as received (accepted_tracestate), passed on unchanged
  bool sampled = false;    // the head decision (head_sampled); what outgoing traceparents say
  span server;             // kind server; its parent is the caller's span, if the request had a traceparent
  // Every other span of the request, a parent before its children. A reference into it is invalidated by
  // the next add_span(): keep the index while spans are added.
  std::vector<span> spans;

  std::size_t span_count() const { return 1 + spans.size(); }

  // A new span under `parent` (ids filled; the caller sets the times, attributes and status). `parent`
  // is taken by value: it may be the id of a span in `spans`, which this moves.
  span& add_span(std::string name, span_kind kind, span_id parent, std::uint64_t start_ns) {
    span& s = spans.emplace_back();
    s.id = new_span_id();
    s.parent = parent;
    s.name = std::move(name);
    s.kind = kind;
    s.start_ns = start_ns;
    return s;
  }
  // A new client span under the server span.
  span& add_client(std::string name, std::uint64_t start_ns) {
    return add_span(std::move(name), span_kind::client, server.id, start_ns);
  }

  // The `traceparent` to send with the downstream request of client span `s`.
  traceparent_text outgoing(const span& s) const { return format_traceparent(trace, s.id, sampled); }
};

// Starts the record of a request from its `traceparent` and `tracestate` field values (either may be
// empty or invalid: the request then starts a new trace and the tracestate is dropped): the trace id
// (the caller's, or new), a new server span id whose parent is the caller's span, and the head decision
// at `sample_ratio`.
trace_record begin_trace(std::string_view traceparent_value, std::string_view tracestate_value,
                         double sample_ratio, std::uint64_t start_ns);

}  // namespace gateway
