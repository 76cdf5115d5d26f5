#pragma once
// One configuration as it runs: the loaded configuration, the downstreams its routes call, its request
// handler and its metric rows. A reload builds a new generation beside the running one and publishes it;
// nothing in a published generation changes afterwards.
//
// Ownership and lifetime:
// - The server holds the current generation in one std::atomic<std::shared_ptr>, replaced by a reload. A
//   request loads it once, when its head has been read, and keeps it to its end: a reload never changes
//   the routes or downstreams under a request. Every request that starts after the replacement, on any
//   I/O thread, takes the new one (one atomic for all threads, so no two threads see the generations in
//   different orders). A connection keeps the generation of its last request while it idles; the old
//   generation goes when the last request or connection holding it does.
// - Downstreams are shared between generations while their settings stay the same (their pools, breakers,
//   caches and counters with them). The server also keeps every downstream it built until it ends: a
//   downstream no generation uses any more only has its idle connections closed, because callbacks of its
//   pools may still be queued on the I/O threads.
// Beast-free.

#include "gateway/config/config.hpp"
#include "gateway/config/restart_changes.hpp"
#include "gateway/downstream/downstream.hpp"
#include "gateway/observe/metrics.hpp"
#include "gateway/server/request_handler.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gateway {

class edge_gate;
class http_downstream;
class sql_downstream;
struct edge_keys;

struct downstream_instance {
  downstream_settings settings;  // what it was built from, compared at a reload
  std::unique_ptr<downstream> object;
  const http_downstream* http = nullptr;  // the same object by its kind
  const sql_downstream* sql = nullptr;
};

struct config_generation {
  std::shared_ptr<const gateway_config> config;
  std::string version;  // names the configuration's text (a hash prefix), shown by /config
  // The settings of that text which only a restart applies and which differ from what runs (the values
  // of the start: `config` holds those); empty at the start. Shown by /config, /status.json, /metrics.
  std::vector<restart_change> restart_pending;
  std::vector<std::shared_ptr<downstream_instance>> downstreams;  // aligned with config->downstreams
  metric_set metrics;
  std::unique_ptr<request_handler> handler;
  // The routes' front doors (server/edge_gate.hpp), by route index; empty when no route has auth or a
  // rate_limit, null for each route that has neither. `keys`: the key files they read, checked for
  // changes by the housekeeping thread.
  std::vector<std::shared_ptr<const edge_gate>> gates;
  std::shared_ptr<edge_keys> keys;
  const edge_gate* gate(int route) const {
    return route >= 0 && !gates.empty() ? gates[static_cast<std::size_t>(route)].get() : nullptr;
  }

  // What the admin thread shows of it.
  std::vector<const sql_downstream*> databases;
  std::vector<const circuit_breaker*> breakers;
  std::vector<const http_downstream*> http_downstreams;
  std::vector<std::pair<std::string, const answer_cache*>> answer_caches;
  std::string config_json;  // the effective configuration, rendered once
};

}  // namespace gateway
