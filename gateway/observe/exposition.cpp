#include "gateway/observe/exposition.hpp"

#include "gateway/downstream/answer_cache.hpp"
#include "gateway/downstream/circuit_breaker.hpp"
#include "gateway/downstream/endpoint_breakers.hpp"
#include "gateway/downstream/http_downstream.hpp"
#include "gateway/observe/logging.hpp"
#include "gateway/observe/metrics.hpp"
#include "gateway/observe/process_stats.hpp"
#include "gateway/observe/prometheus.hpp"
#include "gateway/observe/tracing.hpp"
#include "gateway/runtime/memory_budget.hpp"
#include "gateway/sql/sql_downstream.hpp"
#include "gateway/tls/certificate_reloader.hpp"

namespace gateway {
namespace {

void render_databases(prometheus_writer& out, const std::vector<const sql_downstream*>& databases) {
  if (databases.empty()) return;
  out.family("gateway_db_semaphore_permits_available", "gauge", "Free permits of the database semaphore.");
  for (const auto* d : databases)
    out.sample("gateway_db_semaphore_permits_available", {{"downstream", d->name()}},
               static_cast<double>(d->semaphore().available()));
  out.family("gateway_db_semaphore_waiting", "gauge", "Calls queued for a database permit.");
  for (const auto* d : databases)
    out.sample("gateway_db_semaphore_waiting", {{"downstream", d->name()}},
               static_cast<double>(d->semaphore().waiting()));
  out.family("gateway_db_semaphore_wait_seconds", "histogram",
             "Time calls spent queued for a database permit.");
  for (const auto* d : databases)
    out.histogram_sample("gateway_db_semaphore_wait_seconds", {{"downstream", d->name()}},
                         d->semaphore().wait_time().read());
  out.family("gateway_db_pool_connections", "gauge", "Database connections by state.");
  for (const auto* d : databases) {
    const auto c = d->pool_counts();
    out.sample("gateway_db_pool_connections", {{"downstream", d->name()}, {"state", "idle"}},
               static_cast<double>(c.idle));
    out.sample("gateway_db_pool_connections", {{"downstream", d->name()}, {"state", "in_use"}},
               static_cast<double>(c.in_use));
    out.sample("gateway_db_pool_connections", {{"downstream", d->name()}, {"state", "broken"}},
               static_cast<double>(c.broken));
  }
  out.family("gateway_db_queries_total", "counter", "Database calls by outcome.");
  for (const auto* d : databases) {
    for (auto outcome : {call_outcome::ok, call_outcome::timeout, call_outcome::error,
                         call_outcome::cancelled, call_outcome::rejected}) {
      out.sample("gateway_db_queries_total", {{"downstream", d->name()}, {"outcome", to_string(outcome)}},
                 static_cast<double>(d->stats().queries[static_cast<std::size_t>(outcome)].load()));
    }
  }
  out.family("gateway_db_cancellations_total", "counter",
             "Queries cancelled on the server or interrupted at their deadline.");
  for (const auto* d : databases)
    out.sample("gateway_db_cancellations_total", {{"downstream", d->name()}},
               static_cast<double>(d->stats().server_cancels.load()));
  out.family("gateway_db_reconnects_total", "counter",
             "Database connections opened again after the start (a broken one replaced).");
  for (const auto* d : databases)
    out.sample("gateway_db_reconnects_total", {{"downstream", d->name()}},
               static_cast<double>(d->stats().reconnects.load()));
}

void render_breakers(prometheus_writer& out, const std::vector<const circuit_breaker*>& breakers) {
  if (breakers.empty()) return;
  out.family("gateway_circuit_state", "gauge",
             "State of each downstream's circuit breaker: 0 closed, 1 half-open, 2 open.");
  for (const auto* b : breakers)
    out.sample("gateway_circuit_state", {{"downstream", b->downstream()}},
               static_cast<double>(static_cast<int>(b->current())));
  out.family("gateway_circuit_transitions_total", "counter",
             "Circuit breaker transitions by the state entered.");
  for (const auto* b : breakers) {
    for (auto to :
         {circuit_breaker::state::closed, circuit_breaker::state::half_open, circuit_breaker::state::open})
      out.sample("gateway_circuit_transitions_total",
                 {{"downstream", b->downstream()}, {"to", to_string(to)}},
                 static_cast<double>(b->transitions_to(to)));
  }
}

// The breakers of the endpoints of downstreams with several (circuit_breaker.per_endpoint).
void render_endpoint_breakers(prometheus_writer& out,
                              const std::vector<const http_downstream*>& downstreams) {
  std::vector<std::shared_ptr<const circuit_breaker>> all;
  for (const auto* d : downstreams) {
    if (const auto* breakers = d->breakers()) {
      auto some = breakers->all();
      all.insert(all.end(), some.begin(), some.end());
    }
  }
  out.family("gateway_endpoint_circuit_state", "gauge",
             "State of each endpoint's circuit breaker (downstreams with several endpoints): 0 closed, 1 "
             "half-open, 2 open.");
  for (const auto& b : all)
    out.sample("gateway_endpoint_circuit_state",
               {{"downstream", b->downstream()}, {"endpoint", b->endpoint()}},
               static_cast<double>(static_cast<int>(b->current())));
  out.family("gateway_endpoint_circuit_transitions_total", "counter",
             "Endpoint circuit breaker transitions by the state entered.");
  for (const auto& b : all) {
    for (auto to :
         {circuit_breaker::state::closed, circuit_breaker::state::half_open, circuit_breaker::state::open})
      out.sample("gateway_endpoint_circuit_transitions_total",
                 {{"downstream", b->downstream()}, {"endpoint", b->endpoint()}, {"to", to_string(to)}},
                 static_cast<double>(b->transitions_to(to)));
  }
}

// One family with one sample per downstream: `value(d)` for each of `items`, labelled by `name_of(d)`.
template <class Items, class Name, class Value>
void per_downstream(prometheus_writer& out, std::string_view family, std::string_view type,
                    std::string_view help, const Items& items, Name name_of, Value value) {
  out.family(family, type, help);
  for (const auto& d : items) out.sample(family, {{"downstream", name_of(d)}}, static_cast<double>(value(d)));
}

void render_attempts(prometheus_writer& out, const std::vector<const http_downstream*>& downstreams) {
  if (downstreams.empty()) return;
  const auto name = [](const http_downstream* d) -> const std::string& { return d->name(); };
  per_downstream(out, "gateway_downstream_retries_total", "counter",
                 "Retries started (another attempt after a failed one), within the retry budget.",
                 downstreams, name, [](const http_downstream* d) { return d->retries(); });
  per_downstream(out, "gateway_downstream_hedges_total", "counter",
                 "Hedges started (a second attempt beside a slow first one), within the hedge budget.",
                 downstreams, name, [](const http_downstream* d) { return d->hedges(); });
  per_downstream(out, "gateway_downstream_coalesced_total", "counter",
                 "Calls that shared an identical call's downstream request instead of sending their own.",
                 downstreams, name, [](const http_downstream* d) { return d->coalesced(); });
  per_downstream(out, "gateway_endpoint_ejections_total", "counter",
                 "Endpoints left out of the balancing after failures in a row (outlier ejection), per I/O "
                 "thread.",
                 downstreams, name, [](const http_downstream* d) { return d->ejections(); });
  per_downstream(out, "gateway_downstream_endpoints", "gauge",
                 "Addresses a downstream's calls are balanced over.", downstreams, name,
                 [](const http_downstream* d) { return d->endpoint_count(); });
  render_endpoint_breakers(out, downstreams);
  bool any_tls = false;
  for (const auto* d : downstreams) any_tls = any_tls || d->tls();
  if (!any_tls) return;
  out.family("gateway_downstream_tls_handshakes_total", "counter",
             "TLS handshakes with https downstreams, full or resumed (an abbreviated handshake).");
  for (const auto* d : downstreams) {
    if (!d->tls()) continue;
    for (const bool resumed : {false, true}) {
      out.sample("gateway_downstream_tls_handshakes_total",
                 {{"downstream", d->name()}, {"resumed", resumed ? "true" : "false"}},
                 static_cast<double>(d->tls_handshakes(resumed)));
    }
  }
}

void render_stale(prometheus_writer& out,
                  const std::vector<std::pair<std::string, const answer_cache*>>& caches) {
  if (caches.empty()) return;
  using entry = std::pair<std::string, const answer_cache*>;
  const auto name = [](const entry& e) -> const std::string& { return e.first; };
  per_downstream(out, "gateway_stale_answers_served_total", "counter",
                 "Last good answers served instead of the static fallback (stale_if_error).", caches, name,
                 [](const entry& e) { return e.second->served(); });
  per_downstream(out, "gateway_cache_hits_total", "counter",
                 "Calls answered from the cache without a request, while the answer's Cache-Control allowed.",
                 caches, name, [](const entry& e) { return e.second->hits(); });
  per_downstream(out, "gateway_stale_cache_bytes", "gauge",
                 "Bytes of good answers kept (stale_if_error, cache).", caches, name,
                 [](const entry& e) { return e.second->bytes(); });
}

void render_certificates(prometheus_writer& out, const certificate_reloader& c) {
  out.family("gateway_tls_certificate_reloads_total", "counter",
             "Changes of server.tls cert_file/key_file taken up (success) or refused, the old certificate "
             "kept (failure).");
  out.sample("gateway_tls_certificate_reloads_total", {{"result", "success"}},
             static_cast<double>(c.reloads(true)));
  out.sample("gateway_tls_certificate_reloads_total", {{"result", "failure"}},
             static_cast<double>(c.reloads(false)));
  out.family("gateway_tls_certificate_expiry_timestamp_seconds", "gauge",
             "notAfter of the certificate the public listener serves, in seconds since the Unix epoch.");
  out.sample("gateway_tls_certificate_expiry_timestamp_seconds", {}, static_cast<double>(c.not_after()));
}

// One family with one unlabelled sample.
void single(prometheus_writer& out, std::string_view name, std::string_view type, std::string_view help,
            double value) {
  out.family(name, type, help);
  out.sample(name, {}, value);
}

}  // namespace

std::string render_exposition(const exposition_sources& from) {
  prometheus_writer out;
  from.metrics->render(out, from.inflight);
  single(out, "gateway_buffered_bytes", "gauge",
         "Bytes of downstream answers buffered, counted against the memory budget.",
         static_cast<double>(memory_budget::used()));
  single(out, "gateway_memory_budget_bytes", "gauge",
         "The memory budget for buffered answers (limits.memory_budget, or derived).",
         static_cast<double>(memory_budget::limit()));
  single(out, "gateway_open_connections", "gauge", "Open client connections on the public listener.",
         static_cast<double>(from.open_connections));
  single(out, "gateway_admin_connections", "gauge", "Open connections on the admin listener.",
         static_cast<double>(from.admin_connections));
  out.family("gateway_admin_connections_dropped_total", "counter",
             "Admin connections the listener closed: to make room for a newer one from the same address "
             "(client_cap) or from anywhere (total_cap), or because a request did not arrive whole in "
             "time or an answer was not taken (timeout).");
  out.sample("gateway_admin_connections_dropped_total", {{"reason", "client_cap"}},
             static_cast<double>(from.admin_evicted_for_client));
  out.sample("gateway_admin_connections_dropped_total", {{"reason", "total_cap"}},
             static_cast<double>(from.admin_evicted_for_total));
  out.sample("gateway_admin_connections_dropped_total", {{"reason", "timeout"}},
             static_cast<double>(from.admin_timed_out));
  if (from.log) {
    single(out, "gateway_access_log_dropped_total", "counter",
           "Access log lines dropped because stdout was full, slow or failing.",
           static_cast<double>(from.log->dropped()));
  }
  out.family(
      "gateway_config_reloads_total", "counter",
      "Configuration reloads (SIGHUP, a change of the file, POST /reload) by result: success (applied) "
      "or failure (the running configuration kept).");
  out.sample("gateway_config_reloads_total", {{"result", "success"}},
             static_cast<double>(from.reloads_succeeded));
  out.sample("gateway_config_reloads_total", {{"result", "failure"}},
             static_cast<double>(from.reloads_failed));
  single(out, "gateway_config_last_reload_success_timestamp_seconds", "gauge",
         "When the running configuration was applied (at the start, or by the last good reload), Unix time.",
         from.last_reload_success);
  out.family("gateway_config_info", "gauge",
             "Always 1; the label names the running configuration's version.");
  out.sample("gateway_config_info", {{"version", from.config_version}}, 1);
  single(out, "gateway_config_restart_pending", "gauge",
         "1 while the configuration file holds settings that only a restart applies and that differ from "
         "what runs (/config lists them under restart_pending), else 0.",
         from.restart_pending ? 1.0 : 0.0);
  if (from.tracing) {
    const auto& t = *from.tracing;
    single(out, "gateway_trace_spans_exported_total", "counter", "Spans the collector accepted.",
           static_cast<double>(t.exported()));
    single(out, "gateway_trace_spans_dropped_total", "counter",
           "Spans dropped: the export queue full, a failed export, or left at shutdown.",
           static_cast<double>(t.dropped()));
    single(out, "gateway_trace_export_failures_total", "counter", "Exports to the collector that failed.",
           static_cast<double>(t.export_failures()));
    single(out, "gateway_trace_queued_spans", "gauge", "Spans waiting for export.",
           static_cast<double>(t.queued_spans()));
  }
  if (from.certificates) render_certificates(out, *from.certificates);
  if (from.breakers) render_breakers(out, *from.breakers);
  if (from.http_downstreams) render_attempts(out, *from.http_downstreams);
  if (from.answer_caches) render_stale(out, *from.answer_caches);
  render_databases(out, *from.databases);
  const auto p = read_process_stats();
  single(out, "process_cpu_seconds_total", "counter", "User and system CPU time spent, in seconds.",
         p.cpu_seconds);
  single(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
         static_cast<double>(p.resident_bytes));
  single(out, "process_open_fds", "gauge", "Open file descriptors.", static_cast<double>(p.open_fds));
  single(out, "process_max_fds", "gauge", "Limit on open file descriptors.", static_cast<double>(p.max_fds));
  single(out, "process_start_time_seconds", "gauge",
         "Start time of the process since the Unix epoch, in seconds.", p.start_time_seconds);
  out.family("gateway_build_info", "gauge", "Always 1; the labels tell the build.");
  out.sample("gateway_build_info", {{"version", GATEWAY_VERSION}}, 1);
  return out.take();
}

}  // namespace gateway
