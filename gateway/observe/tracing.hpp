#pragma once
// OpenTelemetry trace export: the gateway's requests as spans, sent to a collector over OTLP/HTTP
// (protobuf). One `tracer` per process.
//
// Use from the request path (the I/O thread that owns the request; nothing here is shared with it):
//   1. At the head of a request: `trace_record rec = tracer.begin(traceparent, tracestate);` (the
//      field values as received, either may be empty). It holds the trace id (the caller's or new), the
//      server span's id and parent, and the head sampling decision (`rec.sampled`).
//   2. Per downstream exchange: `span& s = rec.add_client(name, unix_nanos_now());` (or add_span()
//      under another span), then send `rec.outgoing(s).view()` as its `traceparent` (its sampled flag:
//      the head decision) and `rec.tracestate` as its `tracestate`. At its end set `s.end_ns`, the
//      attributes (span_attributes.hpp) and the status (`s.fail(...)` on an error outcome). A span
//      reference is invalidated by the next add_span(): keep the index while others are added. An
//      aggregate route's calls do this through call_trace (downstream/call_trace.hpp): a span per call,
//      a client span per attempt under it.
//   3. At the end: fill `rec.server` (name "{method} {route}", as the HTTP conventions name server
//      spans; end_ns, attributes, status), then `tracer.submit(std::move(rec), degraded_or_failed)`.
//   Building the record costs a few small allocations per span; when `!tracer.enabled()` skip it all.
//
// Sampling: parent-based ratio at the head (head_sampled: the parent's flag, else the trace id against
// `sample_ratio`), plus a tail rule: a request that was degraded or failed is always kept. Its spans are
// all finished in this process before the decision, so the tail rule needs no buffering; downstreams
// told "not sampled" may still have dropped their part of such a trace.
//
// Threads and bounds: submit() runs on any thread: it moves the record into a queue (trace_queue.hpp, a
// deque under a mutex the export thread holds only while it moves a batch out) of at most
// `max_queue_spans` spans, or drops it (counted). One export thread takes batches of up
// to `max_batch_spans` spans, when a batch is full or `batch_delay` after the last export, encodes them
// (otlp_encoding.hpp) and POSTs them (otlp_http_sender.hpp): connect, write and read within
// `export_timeout`. A failed batch is dropped (counted), never sent again, and the next export waits an
// exponential backoff (from `batch_delay`, doubling to `max_backoff`, jittered); meanwhile the queue
// fills and submit() drops. So an unreachable or hung collector costs dropped spans and one waiting
// thread, nothing on the request path. Memory: the queue's slots (about 230 bytes each, one per span of
// the cap rounded up to a power of two, made at start), the records queued, and one batch being encoded.
//
// Counters for /metrics (all spans unless said otherwise): dropped() (queue full, a failed export, left
// at shutdown; gateway_trace_spans_dropped_total), exported(), export_failures() (failed POSTs).

#include "gateway/runtime/duration.hpp"
#include "gateway/trace/span_attributes.hpp"
#include "gateway/trace/trace_record.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

namespace gateway {

class tracer_state;

struct tracing_settings {
  bool enabled = false;
  std::string endpoint = "http://127.0.0.1:4318/v1/traces";  // http://host:port/path (no https)
  double sample_ratio = 1.0;  // 0..1, for traces that arrive without a traceparent (OTel's default: 1)
  std::string service_name = "gateway";
  std::size_t max_queue_spans = 2048;
  std::size_t max_batch_spans = 512;  // at most max_queue_spans
  microseconds batch_delay = std::chrono::seconds(1);
  microseconds export_timeout = std::chrono::seconds(5);
  microseconds max_backoff = std::chrono::seconds(30);
};

// Throws std::invalid_argument saying what is wrong (for configuration checks; the tracer calls it).
void check_tracing_settings(const tracing_settings& settings);

class tracer {
 public:
  // Starts the export thread when `settings.enabled`. Throws std::invalid_argument for bad settings.
  explicit tracer(tracing_settings settings);
  // shutdown(now) when not shut down yet: what is queued is dropped, not sent.
  ~tracer();
  tracer(const tracer&) = delete;
  tracer& operator=(const tracer&) = delete;

  bool enabled() const { return state_ != nullptr; }
  const tracing_settings& settings() const { return settings_; }

  // begin_trace() at this tracer's sample_ratio.
  trace_record begin(std::string_view traceparent_value, std::string_view tracestate_value,
                     std::uint64_t start_ns = unix_nanos_now()) const {
    return begin_trace(traceparent_value, tracestate_value, settings_.sample_ratio, start_ns);
  }

  // Whether a finished request's record is exported: sampled at the head, or degraded or failed.
  static bool keep(const trace_record& record, bool degraded_or_failed) {
    return record.sampled || degraded_or_failed;
  }

  // Any thread; waits at most for the queue's mutex. A record keep() refuses is discarded (not counted); one
  // that does not fit in the queue, or comes after shutdown() began, is dropped and counted. Nothing
  // happens when tracing is disabled.
  void submit(trace_record&& record, bool degraded_or_failed) noexcept;

  // Sends what is queued, in batches, until `deadline`; drops (and counts) what is left; stops the export
  // thread. Returns by `deadline` (plus a moment to abort a POST still in progress), also with a hung
  // collector; the thread is left to end by itself only if it is stuck resolving the collector's name.
  // Call it once the threads that submit have stopped. Idempotent.
  void shutdown(clock::time_point deadline);

  std::uint64_t dropped() const;
  std::uint64_t exported() const;
  std::uint64_t export_failures() const;
  std::size_t queued_spans() const;

 private:
  tracing_settings settings_;
  std::shared_ptr<tracer_state> state_;  // null when disabled; shared with the export thread
  std::thread thread_;
};

}  // namespace gateway
