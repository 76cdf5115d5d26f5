#pragma once
// What each admin path answers: the probes (/livez, /startupz, /readyz), /metrics and /config. Called on
// the admin thread; reads the process through `admin_sources` (atomics and thread-safe snapshots), never
// waits. Beast-free.

#include "gateway/core/duration.hpp"
#include "gateway/server/admin_server.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace gateway {

class access_log;
class certificate_reloader;
class circuit_breaker;
class http_downstream;
class stale_cache;
class heartbeat;
class metrics_registry;
class sql_downstream;
struct server_state;

// All of it is owned by the server and outlives the admin thread.
struct admin_sources {
  const server_state* state = nullptr;
  std::vector<const heartbeat*> heartbeats;      // one per I/O thread, by index
  clock::duration stall_threshold{};             // admin.stall_threshold: a silent thread fails /livez
  std::vector<const sql_downstream*> databases;  // /readyz waits for them to connect
  std::vector<const circuit_breaker*> breakers;  // shown in /metrics
  std::vector<const http_downstream*> http_downstreams;  // their retries and hedges, in /metrics
  std::vector<std::pair<std::string, const stale_cache*>> stale_caches;  // by downstream name
  const metrics_registry* metrics = nullptr;
  const access_log* log = nullptr;                     // null when access logging is off
  const certificate_reloader* certificates = nullptr;  // null without server.tls
  std::string config_json;                             // the effective configuration, rendered once
};

// `path` without its query.
admin_reply answer_admin(std::string_view path, const admin_sources& from);

}  // namespace gateway
