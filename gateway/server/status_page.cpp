#include "gateway/server/status_page.hpp"

#include "gateway/downstream/circuit_breaker.hpp"
#include "gateway/downstream/endpoint_breakers.hpp"
#include "gateway/downstream/http_downstream.hpp"
#include "gateway/observe/process_stats.hpp"
#include "gateway/observe/recent_degraded.hpp"
#include "gateway/runtime/memory_budget.hpp"
#include "gateway/server/admin.hpp"
#include "gateway/server/config_generation.hpp"
#include "gateway/server/server_state.hpp"
#include "gateway/sql/sql_downstream.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace gateway {
namespace {

using json = nlohmann::json;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Milliseconds of a quantile, or null.
json quantile_ms(const histogram::snapshot& h, double q) {
  const auto s = histogram_quantile(h, q);
  return s ? json(*s * 1000.0) : json(nullptr);
}

json share(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? json(nullptr) : json(static_cast<double>(part) / static_cast<double>(whole));
}

template <class row>
const row* find_named(const std::vector<row>& rows, const std::string& name, std::string row::*key) {
  for (const auto& r : rows) {
    if (r.*key == name) return &r;
  }
  return nullptr;
}

// The routes of the running configuration (a path named by several routes once) over the window.
json routes_json(const config_generation& current, const status_sample& now, const status_sample& then,
                 double seconds) {
  json out = json::array();
  std::vector<std::string> seen;
  for (const auto& route : current.config->routes) {
    if (std::find(seen.begin(), seen.end(), route.path) != seen.end()) continue;
    seen.push_back(route.path);
    const auto* a = find_named(now.metrics.routes, route.path, &route_summary::path);
    if (a == nullptr) continue;
    const auto* b = find_named(then.metrics.routes, route.path, &route_summary::path);
    const auto d = histogram_difference(a->duration, b ? b->duration : histogram::snapshot{});
    const auto requests = d.count();
    const auto degraded = a->degraded - (b ? std::min(b->degraded, a->degraded) : 0);
    const auto errors = a->server_errors - (b ? std::min(b->server_errors, a->server_errors) : 0);
    out.push_back({{"route", route.path},
                   {"method", route.method},
                   {"proxy", route.proxy() != nullptr},
                   {"requests", requests},
                   {"rate", seconds > 0 ? static_cast<double>(requests) / seconds : 0.0},
                   {"p50_ms", quantile_ms(d, 0.5)},
                   {"p99_ms", quantile_ms(d, 0.99)},
                   {"server_errors", errors},
                   {"degraded", degraded},
                   {"degraded_share", share(degraded, requests)},
                   {"total", {{"requests", a->duration.count()}, {"degraded", a->degraded}}}});
  }
  return out;
}

json breaker_json(const circuit_breaker* b) {
  return b ? json(std::string(to_string(b->current()))) : json(nullptr);
}

// One downstream: its calls by outcome over the window, latency, breakers, endpoints, pool.
json downstream_json(const downstream_instance& d, const status_sample& now, const status_sample& then,
                     double seconds) {
  const auto& name = d.settings.name;
  json j{{"name", name}, {"kind", d.sql ? "sql" : "http"}};
  const auto* a = find_named(now.metrics.downstreams, name, &downstream_summary::name);
  const auto* b = find_named(then.metrics.downstreams, name, &downstream_summary::name);
  json outcomes = json::object();
  std::uint64_t calls = 0, failed = 0, cancelled = 0;
  const auto cancelled_label = outcome_label_index(call_outcome::cancelled, call_error::none);
  const auto skipped_label = outcome_label_index(call_outcome::skipped, call_error::none);
  for (std::size_t o = 0; o < outcome_label_count; ++o) {
    const std::uint64_t n = a ? a->calls[o] - (b ? std::min(b->calls[o], a->calls[o]) : 0) : 0;
    outcomes[std::string(outcome_label(o))] = n;
    if (o == skipped_label) continue;  // left out on purpose (`when`): not a call made
    calls += n;
    if (o == cancelled_label) {
      cancelled += n;
    } else if (o != 0) {
      failed += n;
    }
  }
  const auto latency =
      a ? histogram_difference(a->duration, b ? b->duration : histogram::snapshot{}) : histogram::snapshot{};
  j["calls"] = calls;
  j["rate"] = seconds > 0 ? static_cast<double>(calls) / seconds : 0.0;
  j["outcomes"] = std::move(outcomes);
  j["failure_share"] = share(failed, calls - cancelled);
  j["p50_ms"] = quantile_ms(latency, 0.5);
  j["p99_ms"] = quantile_ms(latency, 0.99);
  const auto* breaker = d.object->breaker();
  j["breaker"] = breaker_json(breaker);
  bool endpoint_open = false;
  j["endpoint_breakers"] = json::array();
  if (d.http) {
    j["endpoints"] = d.http->endpoint_count();
    if (const auto* breakers = d.http->breakers()) {
      for (const auto& e : breakers->all()) {
        endpoint_open = endpoint_open || e->current() != circuit_breaker::state::closed;
        j["endpoint_breakers"].push_back({{"endpoint", e->endpoint()}, {"state", to_string(e->current())}});
      }
    }
    j["retries"] = d.http->retries();
    j["hedges"] = d.http->hedges();
    j["coalesced"] = d.http->coalesced();
    j["ejections"] = d.http->ejections();
    j["pool"] = nullptr;  // per I/O thread, not readable from the admin thread
  } else {
    j["endpoints"] = 1;
    const auto c = d.sql->pool_counts();
    j["pool"] = {{"idle", c.idle}, {"in_use", c.in_use}, {"broken", c.broken}};
    j["ready"] = d.sql->ready();
  }
  // down: its breaker refuses calls; degraded: a breaker probing or open for an endpoint, or failed calls
  // in the window.
  std::string status = "ok";
  if (breaker && breaker->current() == circuit_breaker::state::open) {
    status = "down";
  } else if ((breaker && breaker->current() == circuit_breaker::state::half_open) || endpoint_open ||
             failed > 0) {
    status = "degraded";
  }
  j["status"] = status;
  return j;
}

json databases_json(const config_generation& current, const status_sample& now, const status_sample& then) {
  json out = json::array();
  for (const auto* d : current.databases) {
    const auto& sem = d->semaphore();
    const auto* a = find_named(now.db_waits, d->name(), &std::pair<std::string, histogram::snapshot>::first);
    const auto* b = find_named(then.db_waits, d->name(), &std::pair<std::string, histogram::snapshot>::first);
    const auto waits =
        a ? histogram_difference(a->second, b ? b->second : histogram::snapshot{}) : histogram::snapshot{};
    const auto c = d->pool_counts();
    out.push_back({{"name", d->name()},
                   {"ready", d->ready()},
                   {"pool", {{"idle", c.idle}, {"in_use", c.in_use}, {"broken", c.broken}}},
                   {"permits", sem.capacity()},
                   {"available", sem.available()},
                   {"waiting", sem.waiting()},
                   {"waits", waits.count()},
                   {"wait_p50_ms", quantile_ms(waits, 0.5)},
                   {"wait_p99_ms", quantile_ms(waits, 0.99)},
                   {"wait_seconds_total", a ? a->second.sum_seconds : 0.0}});
  }
  return out;
}

json process_json(const admin_sources& from, const status_sample& now, const status_sample& then) {
  const auto p = read_process_stats();
  const auto lag = histogram_difference(now.metrics.loop_lag, then.metrics.loop_lag);
  static constexpr std::array<const char*, 4> reasons{"max_inflight", "max_connections",
                                                      "max_connections_per_client", "memory_budget"};
  json shed = json::object();
  for (std::size_t i = 0; i < reasons.size(); ++i)
    shed[reasons[i]] = now.metrics.shed[i] - std::min(then.metrics.shed[i], now.metrics.shed[i]);
  return {{"io_threads", from.heartbeats.size()},
          {"coroutines", now.metrics.coroutines},
          {"loop_lag_p50_ms", quantile_ms(lag, 0.5)},
          {"loop_lag_p99_ms", quantile_ms(lag, 0.99)},
          {"resident_bytes", p.resident_bytes},
          {"buffered_bytes", memory_budget::used()},
          {"memory_budget_bytes", memory_budget::limit()},
          {"open_connections", from.state->connections.load(std::memory_order_relaxed)},
          {"inflight", from.state->inflight.load(std::memory_order_relaxed)},
          {"shed", std::move(shed)},
          {"client_disconnects",
           now.metrics.disconnects - std::min(then.metrics.disconnects, now.metrics.disconnects)},
          {"open_fds", p.open_fds},
          {"cpu_seconds", p.cpu_seconds},
          {"uptime_seconds", p.start_time_seconds > 0 ? unix_now() - p.start_time_seconds : 0.0},
          {"draining", from.state->draining()}};
}

json recent_json(const recent_degraded* recent) {
  json j{{"capacity", recent ? recent->capacity() : 0}, {"recorded", recent ? recent->recorded() : 0}};
  j["requests"] = json::array();
  if (recent == nullptr) return j;
  for (const auto& e : recent->newest_first()) {
    json calls = json::array();
    for (const auto& c : e.calls) {
      calls.push_back({{"call", c.name},
                       {"downstream", c.downstream},
                       {"outcome", c.outcome},
                       {"detail", c.detail},
                       {"latency_ms", c.latency_ms}});
    }
    j["requests"].push_back(
        {{"request_id", e.request_id}, {"route", e.route}, {"time", e.time}, {"calls", std::move(calls)}});
  }
  return j;
}

}  // namespace

status_window::status_window(clock::time_point start, clock::duration span) : span_(span) {
  samples_.push_back({.at = start, .metrics = {}, .db_waits = {}});
}

void status_window::keep(status_sample s) {
  if (!samples_.empty() && s.at - samples_.back().at < period()) return;
  const auto at = s.at;
  samples_.push_back(std::move(s));
  // The oldest goes once the next one is old enough to be the baseline itself.
  while (samples_.size() >= 2 && samples_[1].at <= at - span_) samples_.pop_front();
}

const status_sample& status_window::baseline(clock::time_point now) const {
  for (auto it = samples_.rbegin(); it != samples_.rend(); ++it) {
    if (it->at <= now - span_) return *it;
  }
  return samples_.front();
}

status_sample take_status_sample(const admin_sources& from, const config_generation& current) {
  status_sample s{.at = clock::now(), .metrics = from.metrics->summarize(), .db_waits = {}};
  for (const auto* d : current.databases)
    s.db_waits.emplace_back(d->name(), d->semaphore().wait_time().read());
  return s;
}

std::string status_json(const admin_sources& from, const config_generation& current) {
  auto now = take_status_sample(from, current);
  const status_sample empty{.at = now.at, .metrics = {}, .db_waits = {}};
  const auto& then = from.status ? from.status->baseline(now.at) : empty;
  const double seconds = std::chrono::duration<double>(now.at - then.at).count();
  json j;
  j["time"] = unix_now();
  j["window_seconds"] = seconds;
  j["config"] = {
      {"version", current.version},
      {"last_reload", from.reloads->last_success.load()},
      {"reloads", {{"succeeded", from.reloads->succeeded.load()}, {"failed", from.reloads->failed.load()}}},
      {"routes", current.config->routes.size()},
      {"downstreams", current.config->downstreams.size()},
      {"restart_pending", restart_change_keys(current.restart_pending)}};
  j["routes"] = routes_json(current, now, then, seconds);
  j["downstreams"] = json::array();
  for (const auto& d : current.downstreams)
    j["downstreams"].push_back(downstream_json(*d, now, then, seconds));
  j["databases"] = databases_json(current, now, then);
  j["process"] = process_json(from, now, then);
  j["recent_degraded"] = recent_json(from.degraded);
  auto body = j.dump(2) + "\n";
  if (from.status) from.status->keep(std::move(now));
  return body;
}

std::optional<double> histogram_quantile(const histogram::snapshot& h, double q) {
  const auto total = h.count();
  if (total == 0) return std::nullopt;
  const double rank = std::clamp(q, 0.0, 1.0) * static_cast<double>(total);
  std::uint64_t below = 0;
  for (std::size_t i = 0; i < h.counts.size(); ++i) {
    const auto in = h.counts[i];
    if (in > 0 && static_cast<double>(below + in) >= rank) {
      if (i == h.bounds->size()) return h.bounds->back();
      const double lower = i == 0 ? 0.0 : (*h.bounds)[i - 1];
      const double upper = (*h.bounds)[i];
      return lower + (upper - lower) * (rank - static_cast<double>(below)) / static_cast<double>(in);
    }
    below += in;
  }
  return h.bounds->back();
}

histogram::snapshot histogram_difference(const histogram::snapshot& now, const histogram::snapshot& then) {
  histogram::snapshot d;
  d.bounds = now.bounds;
  for (std::size_t i = 0; i < d.counts.size(); ++i)
    d.counts[i] = now.counts[i] - std::min(now.counts[i], then.counts[i]);
  d.sum_seconds = std::max(0.0, now.sum_seconds - then.sum_seconds);
  return d;
}

}  // namespace gateway
