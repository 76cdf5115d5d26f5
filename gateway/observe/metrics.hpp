#pragma once
// The gateway's request metrics. Each I/O thread records into its own worker_metrics with relaxed
// atomics (no contention, no locks on the hot path); a scrape merges all workers. Label sets are fixed
// by the configuration (routes, calls, downstreams) plus a short list of status codes, so cardinality
// stays low whatever the traffic.

#include "gateway/config/config.hpp"
#include "gateway/core/histogram.hpp"
#include "gateway/downstream/call_result.hpp"

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

class worker_metrics {
 public:
  worker_metrics(const gateway_config& config);

  // route: index into config.routes, or -1 when no route matched; method as received.
  void request_done(int route, std::string_view method, unsigned status, clock::duration elapsed);
  void call_done(std::size_t downstream, call_outcome outcome, clock::duration latency) {
    call_duration_[downstream * outcome_count + static_cast<std::size_t>(outcome)].observe(latency);
  }
  void degraded_response(std::size_t route) { bump(degraded_[route]); }
  // A pass-through exchange of `route` moved `request` body bytes to its downstream, `response` back.
  void proxy_bytes(std::size_t route, std::uint64_t request, std::uint64_t response) {
    proxy_bytes_[route * 2].fetch_add(request, std::memory_order_relaxed);
    proxy_bytes_[route * 2 + 1].fetch_add(response, std::memory_order_relaxed);
  }
  void fallback(std::size_t route, std::size_t call) { bump(fallbacks_[call_offset_[route] + call]); }
  void client_disconnect() { bump(disconnects_); }
  void shed(shed_reason why) { bump(shed_[static_cast<std::size_t>(why)]); }
  void tls_handshake_failed(tls_failure why) { bump(tls_failures_[static_cast<std::size_t>(why)]); }
  void loop_lag(clock::duration lag) { loop_lag_.observe(lag); }
  void coroutine_started() { coroutines_.fetch_add(1, std::memory_order_relaxed); }
  void coroutine_ended() { coroutines_.fetch_sub(1, std::memory_order_relaxed); }

 private:
  friend class metrics_registry;
  static constexpr std::size_t outcome_count = call_outcome_count;
  using counter = std::atomic<std::uint64_t>;
  static void bump(counter& c) { c.fetch_add(1, std::memory_order_relaxed); }

  std::vector<histogram> request_duration_;  // [((route + 1) * methods + method) * status_slots + slot]
  std::vector<histogram> call_duration_;     // [downstream * outcome_count + outcome]
  std::vector<counter> degraded_;            // per route
  std::vector<counter> proxy_bytes_;         // per route: [route * 2] request, [route * 2 + 1] response
  std::vector<counter> fallbacks_;           // per route call, flattened
  std::vector<std::size_t> call_offset_;     // first fallbacks_ index of each route
  counter disconnects_{0};
  std::array<counter, static_cast<std::size_t>(shed_reason::count)> shed_{};
  std::array<counter, static_cast<std::size_t>(tls_failure::count)> tls_failures_{};
  std::atomic<std::int64_t> coroutines_{0};
  histogram loop_lag_;
};

class metrics_registry {
 public:
  metrics_registry(const gateway_config& config, std::size_t workers);

  worker_metrics& worker(std::size_t i) { return *workers_[i]; }

  // Appends the request, call, shedding, TLS handshake (with server.tls), coroutine and event-loop families.
  void render(prometheus_writer& out, std::size_t active_requests) const;

 private:
  const gateway_config& config_;
  std::vector<std::unique_ptr<worker_metrics>> workers_;
};

}  // namespace gateway
