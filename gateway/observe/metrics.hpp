#pragma once
// The gateway's request metrics. Each I/O thread records into its own part of every series with relaxed
// atomics (no contention, no locks on the hot path); a scrape merges all workers. Label sets come from the
// configurations (routes, calls, downstreams) plus a short list of status codes, so cardinality stays low
// whatever the traffic.

#include "gateway/config/config.hpp"
#include "gateway/downstream/call_result.hpp"
#include "gateway/runtime/histogram.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gateway {

class prometheus_writer;

enum class shed_reason : std::uint8_t {
  max_inflight,
  max_connections,
  max_connections_per_client,
  memory_budget,
  count
};

// Why a client's TLS handshake failed: it did not finish within header_timeout, the client closed or
// reset the connection, or the handshake itself failed (a protocol version, cipher or ALPN refused).
enum class tls_failure : std::uint8_t { timeout, closed, protocol, count };

class thread_metrics {
 public:
  void client_disconnect() { bump(disconnects_); }
  void shed(shed_reason why) { bump(shed_[static_cast<std::size_t>(why)]); }
  void tls_handshake_failed(tls_failure why) { bump(tls_failures_[static_cast<std::size_t>(why)]); }
  void loop_lag(clock::duration lag) { loop_lag_.observe(lag); }
  void coroutine_started() { coroutines_.fetch_add(1, std::memory_order_relaxed); }
  void coroutine_ended() { coroutines_.fetch_sub(1, std::memory_order_relaxed); }

 private:
  friend class metrics_registry;
  using counter = std::atomic<std::uint64_t>;
  static void bump(counter& c) { c.fetch_add(1, std::memory_order_relaxed); }

  counter disconnects_{0};
  std::array<counter, static_cast<std::size_t>(shed_reason::count)> shed_{};
  std::array<counter, static_cast<std::size_t>(tls_failure::count)> tls_failures_{};
  std::atomic<std::int64_t> coroutines_{0};
  histogram loop_lag_;
};

struct route_series;
struct downstream_series;
struct fallback_series;

// The series of one configuration's routes, calls and downstreams (metrics_registry::series_for): what the
// request path records into, by the configuration's indexes and the I/O thread's index. Rows belong to the
// registry and outlive every metric_set.
class metric_set {
 public:
  // route: index into config.routes, or -1 when no route matched; method as received.
  void request_done(std::size_t thread_index, int route, std::string_view method, unsigned status,
                    clock::duration elapsed) const;
  // `outcome`: the call's outcome_label_index (call_result::label_index()).
  void call_done(std::size_t thread_index, std::size_t downstream, std::size_t outcome,
                 clock::duration latency) const;
  void degraded_response(std::size_t thread_index, std::size_t route) const;
  // A pass-through exchange of `route` moved `request` body bytes to its downstream, `response` back.
  void proxy_bytes(std::size_t thread_index, std::size_t route, std::uint64_t request,
                   std::uint64_t response) const;
  void fallback(std::size_t thread_index, std::size_t route, std::size_t call) const;
  // A route's front door (server/edge_gate.hpp) refused a request: `reason` indexes auth_refusal_labels;
  // `key` a limit's rate_limit_settings::key_kind.
  void auth_refused(std::size_t thread_index, std::size_t route, std::size_t reason) const;
  void rate_limited(std::size_t thread_index, std::size_t route, std::size_t key) const;
  // A limit with backend: redis decided by its local fallback bucket (Redis slow or down).
  void limit_fallback(std::size_t thread_index, std::size_t route) const;

 private:
  friend class metrics_registry;
  std::vector<route_series*> routes_;  // [0]: unmatched, then config.routes
  std::vector<downstream_series*> downstreams_;
  std::vector<std::vector<fallback_series*>> fallbacks_;  // [route][call]
};

// What the admin status page reads of the registry (metrics_registry::summarize): cumulative counts since
// the start, merged over the I/O threads; a window is the difference of two summaries.
struct route_summary {
  std::string path;
  histogram::snapshot duration;     // every method and status
  std::uint64_t server_errors = 0;  // answered 5xx
  std::uint64_t degraded = 0;
};
struct downstream_summary {
  std::string name;
  std::array<std::uint64_t, outcome_label_count> calls{};  // by outcome_label_index
  histogram::snapshot duration;                            // every outcome
};
struct metrics_summary {
  std::vector<route_summary> routes;  // every route row but "unmatched", in the order first named
  std::vector<downstream_summary> downstreams;
  std::int64_t coroutines = 0;
  histogram::snapshot loop_lag;  // every I/O thread
  std::array<std::uint64_t, static_cast<std::size_t>(shed_reason::count)> shed{};
  std::uint64_t disconnects = 0;
};

// The bounds of the request and call duration histograms for `config`: the latency grid plus bounds at
// and just above each route's deadline (aggregating routes, shortest first), then each call's timeout
// shorter than its route's deadline, while there is room (histogram_bounds::with_deadlines).
histogram_bounds duration_bounds(const gateway_config& config);

// Every series the process has recorded: a row per route path, per downstream name and per route call,
// made the first time a configuration names it and kept until the process ends, so that a reload that
// removes a route and brings it back never sends a counter backwards. Their number is capped (series_for
// refuses a configuration beyond it), so repeated reloads cannot grow memory without bound.
class metrics_registry {
 public:
  static constexpr std::size_t max_series = 4096;  // of each kind: routes, downstreams, route calls

  // `durations`: the buckets of every request and call duration series, fixed for the life of the
  // process (a series' `le` labels never change; a reload keeps them).
  metrics_registry(std::size_t workers, bool tls_listener,
                   const histogram_bounds& durations = histogram_bounds::latency());
  ~metrics_registry();
  metrics_registry(const metrics_registry&) = delete;
  metrics_registry& operator=(const metrics_registry&) = delete;

  const histogram_bounds& duration_bounds() const { return durations_; }

  thread_metrics& of_thread(std::size_t i) { return *workers_[i]; }

  // The rows of `config`'s routes, calls and downstreams, made where missing. Thread-safe. Throws
  // std::runtime_error when that would exceed max_series.
  metric_set series_for(const gateway_config& config);

  // Appends the request, call, shedding, TLS handshake (with server.tls), coroutine and event-loop families.
  void render(prometheus_writer& out, std::size_t active_requests) const;

  // Every row and the I/O threads' figures, read like a scrape. Thread-safe.
  metrics_summary summarize() const;

 private:
  struct rows;
  std::vector<std::unique_ptr<thread_metrics>> workers_;
  bool tls_listener_;
  histogram_bounds durations_;  // the rows' histograms point at it
  std::unique_ptr<rows> rows_;
};

}  // namespace gateway
