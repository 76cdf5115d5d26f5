#pragma once
// The whole /metrics page in the Prometheus text format: the request metrics, then the gateway's gauges
// (memory budget, open connections, the admin listener's connections, access log), the listener's TLS
// certificate, the circuit breakers, the databases, the process and the build. Rendered on the admin thread
// at each scrape; reads only atomics and thread-safe snapshots.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gateway {

class access_log;
class certificate_reloader;
class tracer;
class circuit_breaker;
class http_downstream;
class answer_cache;
class metrics_registry;
class sql_downstream;

struct exposition_sources {
  const metrics_registry* metrics = nullptr;
  std::size_t inflight = 0;          // requests being handled
  std::size_t open_connections = 0;  // on the public listener
  // The admin listener's connections: open, and closed by the listener by reason (admin_server.hpp).
  std::size_t admin_connections = 0;
  std::uint64_t admin_evicted_for_client = 0;
  std::uint64_t admin_evicted_for_total = 0;
  std::uint64_t admin_timed_out = 0;
  const access_log* log = nullptr;  // null when access logging is off
  const std::vector<const sql_downstream*>* databases = nullptr;
  const std::vector<const circuit_breaker*>* breakers = nullptr;
  const std::vector<const http_downstream*>* http_downstreams = nullptr;
  const std::vector<std::pair<std::string, const answer_cache*>>* answer_caches = nullptr;
  const certificate_reloader* certificates = nullptr;  // the listener's TLS; null without server.tls
  const tracer* tracing = nullptr;                     // null without tracing.enabled
  // The configuration: the running version, and the reloads since the start by result.
  std::string config_version;
  std::uint64_t reloads_succeeded = 0;
  std::uint64_t reloads_failed = 0;
  double last_reload_success = 0;  // Unix time of the last configuration applied (the start's at first)
  bool restart_pending = false;    // the file holds settings only a restart applies, other than what runs
};

std::string render_exposition(const exposition_sources& from);

}  // namespace gateway
