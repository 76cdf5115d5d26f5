#pragma once
// What each admin path answers: the probes (/livez, /startupz, /readyz), /metrics, /config, the status
// page (/ and /status.json, see status_page.hpp) and POST /reload. With admin.require_token every path but
// the probes needs Authorization: Bearer <admin.token> (401 without the field, 403 with another value).
// Called on the admin thread; reads the process through `admin_sources` (atomics and thread-safe snapshots)
// and never waits, but for a reload, which runs in full before it answers. Every answer carries
// X-Config-Version, the running configuration's version. Beast-free.

#include "gateway/runtime/duration.hpp"
#include "gateway/server/admin_server.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gateway {

struct config_generation;
class access_log;
class certificate_reloader;
class tracer;
class circuit_breaker;
class http_downstream;
class answer_cache;
class heartbeat;
class metrics_registry;
class recent_degraded;
class sql_downstream;
class status_window;
struct server_state;

// What a reload did (POST /reload, SIGHUP, a change of the file).
struct reload_report {
  bool applied = false;             // a new configuration runs now
  bool unchanged = false;           // the file has the running configuration's text: nothing to do
  std::string version;              // the version running after it
  std::vector<std::string> errors;  // why nothing was applied, "FILE:LINE:COL: message" each
  // Settings that differ in the file but only a restart applies ("server.listen", ...); the rest of the
  // file was applied. Every reload lists them, applied or not, until the file holds the running values
  // again (the running generation's restart_pending).
  std::vector<std::string> restart_required;
};

// Reload counters; written by the reloading thread, read by scrapes.
struct reload_counters {
  std::atomic<std::uint64_t> succeeded{0};
  std::atomic<std::uint64_t> failed{0};
  std::atomic<double> last_success{0};  // Unix time
};

// All of it is owned by the server and outlives the admin thread.
struct admin_sources {
  const server_state* state = nullptr;
  std::vector<const heartbeat*> heartbeats;  // one per I/O thread, by index
  clock::duration stall_threshold{};         // admin.stall_threshold: a silent thread fails /livez
  const metrics_registry* metrics = nullptr;
  const access_log* log = nullptr;                     // null when access logging is off
  const certificate_reloader* certificates = nullptr;  // null without server.tls
  const tracer* tracing = nullptr;                     // null without tracing.enabled
  // The current configuration generation (its downstreams, breakers, caches and /config); thread-safe.
  std::function<std::shared_ptr<const config_generation>()> generation;
  // Reloads the configuration file (POST /reload); thread-safe, returns when done.
  std::function<reload_report()> reload;
  const reload_counters* reloads = nullptr;
  std::string token;                // admin.token: lets POST /reload come from a non-loopback address
  bool require_token = false;       // admin.require_token: every path but the probes needs the token
  status_window* status = nullptr;  // the status page's samples (admin thread only)
  const recent_degraded* degraded = nullptr;  // the last degraded responses; null: none kept
  const admin_server* listener = nullptr;     // the admin listener itself (its connection counts)
};

admin_reply answer_admin(const admin_request& request, const admin_sources& from);

// The JSON answer of POST /reload.
std::string reload_report_json(const reload_report& report);

}  // namespace gateway
