#include "gateway/observe/metrics.hpp"

#include "gateway/observe/prometheus.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace gateway {
namespace {

// The status codes the gateway answers with; anything else is counted as "other".
constexpr std::array<unsigned, 15> status_codes{200, 204, 400, 404, 405, 408, 413, 414,
                                                431, 499, 500, 501, 502, 503, 504};
constexpr std::size_t status_slots = status_codes.size() + 1;

std::size_t status_slot(unsigned status) {
  for (std::size_t i = 0; i < status_codes.size(); ++i) {
    if (status_codes[i] == status) return i;
  }
  return status_codes.size();
}

// The request methods named in metrics (OpenTelemetry's list); any other is "_OTHER".
constexpr std::array<std::string_view, 10> methods{"GET",     "HEAD",    "POST",  "PUT",   "DELETE",
                                                   "CONNECT", "OPTIONS", "TRACE", "PATCH", "_OTHER"};

std::size_t method_slot(std::string_view method) {
  for (std::size_t i = 0; i + 1 < methods.size(); ++i) {
    if (methods[i] == method) return i;
  }
  return methods.size() - 1;
}

// `n` histograms of `bounds` (histograms hold atomics: made in place, never copied).
template <std::size_t n, std::size_t... i>
std::array<histogram, n> histograms_of(const histogram_bounds& bounds, std::index_sequence<i...>) {
  return {{(static_cast<void>(i), histogram(bounds))...}};
}
template <std::size_t n>
std::array<histogram, n> histograms_of(const histogram_bounds& bounds) {
  return histograms_of<n>(bounds, std::make_index_sequence<n>{});
}

}  // namespace

histogram_bounds duration_bounds(const gateway_config& config) {
  std::vector<microseconds> deadlines;
  std::vector<microseconds> timeouts;
  for (const auto& route : config.routes) {
    const auto* aggregate = route.aggregate();
    if (aggregate == nullptr) continue;
    deadlines.push_back(aggregate->deadline);
    for (const auto& call : aggregate->calls) {
      if (call.timeout && *call.timeout < aggregate->deadline) timeouts.push_back(*call.timeout);
    }
  }
  std::sort(deadlines.begin(), deadlines.end());
  std::sort(timeouts.begin(), timeouts.end());
  deadlines.insert(deadlines.end(), timeouts.begin(), timeouts.end());
  deadlines.erase(std::unique(deadlines.begin(), deadlines.end()), deadlines.end());
  return histogram_bounds::with_deadlines(deadlines);
}

// One I/O thread's part of a row, on cache lines of its own.
struct alignas(64) route_part {
  explicit route_part(const histogram_bounds& bounds)
      : duration(histograms_of<methods.size() * status_slots>(bounds)) {}
  std::array<histogram, methods.size() * status_slots> duration;  // [method * status_slots + slot]
  std::atomic<std::uint64_t> degraded{0};
  std::array<std::atomic<std::uint64_t>, 2> proxy_bytes{};  // request, response
  std::array<std::atomic<std::uint64_t>, auth_refusal_count> auth_refused{};
  std::array<std::atomic<std::uint64_t>, std::size(rate_limit_settings::key_labels)> rate_limited{};
  std::atomic<std::uint64_t> limit_fallbacks{0};
};
struct alignas(64) downstream_part {
  explicit downstream_part(const histogram_bounds& bounds)
      : duration(histograms_of<outcome_label_count>(bounds)) {}
  std::array<histogram, outcome_label_count> duration;  // by outcome_label_index
};
struct alignas(64) fallback_part {
  std::atomic<std::uint64_t> count{0};
};

template <class part>
struct series_parts {
  template <class... args>
  explicit series_parts(std::size_t workers, const args&... a) {
    for (std::size_t i = 0; i < workers; ++i) parts.emplace_back(a...);
  }
  std::deque<part> parts;  // by I/O thread (a deque: parts hold atomics, are made in place, never moved)

  template <class read>
  auto sum(read r) const {
    decltype(r(parts.front())) total{};
    for (const auto& p : parts) total += r(p);
    return total;
  }
};

struct route_series : series_parts<route_part> {
  route_series(std::string p, std::size_t workers, const histogram_bounds& bounds)
      : series_parts(workers, bounds), path(std::move(p)) {}
  std::string path;      // the route label ("unmatched" for the row of requests no route took)
  bool proxy = false;    // a pass-through route in some configuration: its bytes are shown (under the lock)
  bool auth = false;     // a route with auth in some configuration: its refusals are shown (under the lock)
  bool limited = false;  // a route with rate_limit in some configuration (under the lock)
  // Its series shown from the start, at zero: its method (GET for a route of any method) and status 200.
  std::size_t method = method_slot("GET");
};
struct downstream_series : series_parts<downstream_part> {
  downstream_series(std::string n, std::size_t workers, const histogram_bounds& bounds)
      : series_parts(workers, bounds), name(std::move(n)) {}
  std::string name;
  // The host of its url in the latest configuration that named it (under the lock); empty for SQL.
  std::string server_address;
};
struct fallback_series : series_parts<fallback_part> {
  fallback_series(std::string r, std::string c, std::size_t workers)
      : series_parts(workers), route(std::move(r)), call(std::move(c)) {}
  std::string route;
  std::string call;
};

void metric_set::request_done(std::size_t thread_index, int route, std::string_view method, unsigned status,
                              clock::duration elapsed) const {
  auto& part = routes_[static_cast<std::size_t>(route + 1)]->parts[thread_index];
  part.duration[method_slot(method) * status_slots + status_slot(status)].observe(elapsed);
}

void metric_set::call_done(std::size_t thread_index, std::size_t downstream, std::size_t outcome,
                           clock::duration latency) const {
  downstreams_[downstream]->parts[thread_index].duration[outcome].observe(latency);
}

void metric_set::degraded_response(std::size_t thread_index, std::size_t route) const {
  routes_[route + 1]->parts[thread_index].degraded.fetch_add(1, std::memory_order_relaxed);
}

void metric_set::auth_refused(std::size_t thread_index, std::size_t route, std::size_t reason) const {
  routes_[route + 1]->parts[thread_index].auth_refused[reason].fetch_add(1, std::memory_order_relaxed);
}

void metric_set::rate_limited(std::size_t thread_index, std::size_t route, std::size_t key) const {
  routes_[route + 1]->parts[thread_index].rate_limited[key].fetch_add(1, std::memory_order_relaxed);
}

void metric_set::limit_fallback(std::size_t thread_index, std::size_t route) const {
  routes_[route + 1]->parts[thread_index].limit_fallbacks.fetch_add(1, std::memory_order_relaxed);
}

void metric_set::proxy_bytes(std::size_t thread_index, std::size_t route, std::uint64_t request,
                             std::uint64_t response) const {
  auto& part = routes_[route + 1]->parts[thread_index];
  part.proxy_bytes[0].fetch_add(request, std::memory_order_relaxed);
  part.proxy_bytes[1].fetch_add(response, std::memory_order_relaxed);
}

void metric_set::fallback(std::size_t thread_index, std::size_t route, std::size_t call) const {
  fallbacks_[route][call]->parts[thread_index].count.fetch_add(1, std::memory_order_relaxed);
}

// The rows in the order they were first named (rendered in that order); std::deque never moves them.
struct metrics_registry::rows {
  mutable std::mutex lock;
  std::deque<route_series> routes;
  std::deque<downstream_series> downstreams;
  std::deque<fallback_series> fallbacks;
};

metrics_registry::metrics_registry(std::size_t workers, bool tls_listener, const histogram_bounds& durations)
    : tls_listener_(tls_listener), durations_(durations), rows_(std::make_unique<rows>()) {
  for (std::size_t i = 0; i < workers; ++i) workers_.push_back(std::make_unique<thread_metrics>());
  rows_->routes.emplace_back("unmatched", workers, durations_);
}

metrics_registry::~metrics_registry() = default;

metric_set metrics_registry::series_for(const gateway_config& config) {
  const std::size_t workers = workers_.size();
  const std::lock_guard hold(rows_->lock);
  auto& r = *rows_;
  auto find_or_add = [&](auto& table, auto matches, const auto&... args) {
    for (auto& row : table) {
      if (matches(row)) return &row;
    }
    if (table.size() >= max_series)
      throw std::runtime_error("more than " + std::to_string(max_series) +
                               " distinct routes, downstreams or calls since the start: restart to apply");
    return &table.emplace_back(args...);
  };
  metric_set set;
  set.routes_.push_back(&r.routes.front());
  for (const auto& route : config.routes) {
    auto* row = find_or_add(
        r.routes, [&](const route_series& s) { return s.path == route.path && &s != &r.routes.front(); },
        route.path, workers, durations_);
    if (route.proxy() != nullptr) row->proxy = true;
    if (route.auth) row->auth = true;
    if (!route.rate_limits.empty()) row->limited = true;
    if (route.method != "*" && !route.method.empty()) row->method = method_slot(route.method);
    set.routes_.push_back(row);
    auto& calls = set.fallbacks_.emplace_back();
    const auto* aggregate = route.aggregate();
    if (aggregate == nullptr) continue;
    for (const auto& call : aggregate->calls) {
      calls.push_back(find_or_add(
          r.fallbacks, [&](const fallback_series& s) { return s.route == route.path && s.call == call.name; },
          route.path, call.name, workers));
    }
  }
  for (const auto& d : config.downstreams) {
    auto* row = find_or_add(
        r.downstreams, [&](const downstream_series& s) { return s.name == d.name; }, d.name, workers,
        durations_);
    row->server_address = d.kind == downstream_kind::http ? d.host : std::string();
    set.downstreams_.push_back(row);
  }
  return set;
}

void metrics_registry::render(prometheus_writer& out, std::size_t active_requests) const {
  const std::lock_guard hold(rows_->lock);
  const auto& r = *rows_;
  out.family("http_server_request_duration_seconds", "histogram",
             "Duration of inbound HTTP requests, from the request head to the response written.");
  const auto ok_slot = status_slot(200);
  for (const auto& row : r.routes) {
    for (std::size_t m = 0; m < methods.size(); ++m) {
      for (std::size_t slot = 0; slot < status_slots; ++slot) {
        const auto h =
            row.sum([&](const route_part& p) { return p.duration[m * status_slots + slot].read(); });
        const bool from_start = &row != &r.routes.front() && m == row.method && slot == ok_slot;
        if (h.count() == 0 && !from_start) continue;
        const std::string code = slot < status_codes.size() ? std::to_string(status_codes[slot]) : "other";
        out.histogram_sample("http_server_request_duration_seconds",
                             {{"http_route", row.path},
                              {"http_request_method", methods[m]},
                              {"http_response_status_code", code}},
                             h);
      }
    }
  }
  out.family("http_server_active_requests", "gauge", "Inbound requests being handled.");
  out.sample("http_server_active_requests", {}, static_cast<double>(active_requests));

  // Every outcome's count from the start (at zero), the durations of those that happened and of ok.
  out.family(
      "http_client_request_duration_seconds", "histogram",
      "Duration of downstream calls by outcome: ok, timeout, cancelled, rejected, circuit_open, stale, "
      "dependency (not sent: a call it needs failed), skipped (its `when` was false), or "
      "the kind of error (status_4xx, status_5xx, invalid_body, too_large, refused, reset, tls, error); "
      "error_type is the outcome of a call that was not ok, server_address the host of an HTTP downstream.");
  std::vector<std::vector<std::uint64_t>> counts;
  for (const auto& row : r.downstreams) {
    auto& count = counts.emplace_back(outcome_label_count);
    for (std::size_t o = 0; o < outcome_label_count; ++o) {
      const auto h = row.sum([&](const downstream_part& p) { return p.duration[o].read(); });
      count[o] = h.count();
      if (h.count() == 0 && o != 0) continue;
      out.histogram_sample("http_client_request_duration_seconds",
                           {{"downstream", row.name},
                            {"outcome", outcome_label(o)},
                            {"error_type", o == 0 ? std::string_view() : outcome_label(o)},
                            {"server_address", row.server_address}},
                           h);
    }
  }
  out.family("gateway_downstream_calls_total", "counter", "Downstream calls by outcome (as above).");
  for (std::size_t d = 0; d < r.downstreams.size(); ++d) {
    for (std::size_t o = 0; o < outcome_label_count; ++o) {
      out.sample("gateway_downstream_calls_total",
                 {{"downstream", r.downstreams[d].name},
                  {"outcome", outcome_label(o)},
                  {"error_type", o == 0 ? std::string_view() : outcome_label(o)},
                  {"server_address", r.downstreams[d].server_address}},
                 static_cast<double>(counts[d][o]));
    }
  }

  auto counted = [](const std::atomic<std::uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  out.family("gateway_degraded_responses_total", "counter", "Responses with at least one degraded entry.");
  for (std::size_t i = 1; i < r.routes.size(); ++i) {
    const auto& row = r.routes[i];
    out.sample("gateway_degraded_responses_total", {{"http_route", row.path}},
               static_cast<double>(row.sum([&](const route_part& p) { return counted(p.degraded); })));
  }
  out.family("gateway_proxy_bytes_total", "counter",
             "Body bytes through pass-through routes: the client's to the downstream (request), the "
             "downstream's to the client (response).");
  for (const auto& row : r.routes) {
    if (!row.proxy) continue;
    for (std::size_t d = 0; d < 2; ++d) {
      out.sample(
          "gateway_proxy_bytes_total",
          {{"http_route", row.path}, {"direction", d == 0 ? "request" : "response"}},
          static_cast<double>(row.sum([&](const route_part& p) { return counted(p.proxy_bytes[d]); })));
    }
  }
  out.family("gateway_auth_refusals_total", "counter",
             "Requests a route's auth refused (401, 403, 503 without keys), by reason.");
  for (const auto& row : r.routes) {
    if (!row.auth) continue;
    for (std::size_t k = 0; k < auth_refusal_count; ++k) {
      out.sample(
          "gateway_auth_refusals_total", {{"http_route", row.path}, {"reason", auth_refusal_labels[k]}},
          static_cast<double>(row.sum([&](const route_part& p) { return counted(p.auth_refused[k]); })));
    }
  }
  out.family("gateway_rate_limited_total", "counter",
             "Requests answered 429 by a route's rate limit, by the kind of the limit's key.");
  for (const auto& row : r.routes) {
    if (!row.limited) continue;
    for (std::size_t k = 0; k < std::size(rate_limit_settings::key_labels); ++k) {
      out.sample(
          "gateway_rate_limited_total",
          {{"http_route", row.path}, {"key", rate_limit_settings::key_labels[k]}},
          static_cast<double>(row.sum([&](const route_part& p) { return counted(p.rate_limited[k]); })));
    }
  }
  out.family("gateway_rate_limit_fallbacks_total", "counter",
             "Decisions of backend: redis limits taken by their local fallback bucket (Redis slow or down).");
  for (const auto& row : r.routes) {
    if (!row.limited) continue;
    out.sample("gateway_rate_limit_fallbacks_total", {{"http_route", row.path}},
               static_cast<double>(row.sum([&](const route_part& p) { return counted(p.limit_fallbacks); })));
  }
  out.family("gateway_fallbacks_total", "counter", "Entries replaced by their fallback.");
  for (const auto& row : r.fallbacks) {
    out.sample("gateway_fallbacks_total", {{"http_route", row.route}, {"call", row.call}},
               static_cast<double>(row.sum([&](const fallback_part& p) { return counted(p.count); })));
  }

  std::uint64_t disconnects = 0;
  std::array<std::uint64_t, static_cast<std::size_t>(shed_reason::count)> shed{};
  std::int64_t coroutines = 0;
  histogram::snapshot lag;
  for (const auto& w : workers_) {
    disconnects += w->disconnects_.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < shed.size(); ++i) shed[i] += w->shed_[i].load(std::memory_order_relaxed);
    coroutines += w->coroutines_.load(std::memory_order_relaxed);
  }
  out.family("gateway_client_disconnects_total", "counter",
             "Requests abandoned because the client closed its connection.");
  out.sample("gateway_client_disconnects_total", {}, static_cast<double>(disconnects));
  out.family("gateway_shed_requests_total", "counter", "Requests refused with 503 to protect the gateway.");
  out.sample("gateway_shed_requests_total", {{"reason", "max_inflight"}}, static_cast<double>(shed[0]));
  out.sample("gateway_shed_requests_total", {{"reason", "max_connections"}}, static_cast<double>(shed[1]));
  out.sample("gateway_shed_requests_total", {{"reason", "max_connections_per_client"}},
             static_cast<double>(shed[2]));
  out.sample("gateway_shed_requests_total", {{"reason", "memory_budget"}}, static_cast<double>(shed[3]));
  if (tls_listener_) {
    out.family("gateway_tls_handshake_failures_total", "counter",
               "Client TLS handshakes that failed: timeout (not done within limits.header_timeout), closed "
               "(the client left), protocol (refused: version, cipher, ALPN).");
    static constexpr std::array<std::string_view, 3> reasons{"timeout", "closed", "protocol"};
    for (std::size_t i = 0; i < reasons.size(); ++i) {
      std::uint64_t total = 0;
      for (const auto& w : workers_) total += w->tls_failures_[i].load(std::memory_order_relaxed);
      out.sample("gateway_tls_handshake_failures_total", {{"reason", reasons[i]}},
                 static_cast<double>(total));
    }
  }
  out.family("gateway_coroutines_active", "gauge",
             "Coroutines alive: one per connection plus one per call in flight.");
  out.sample("gateway_coroutines_active", {}, static_cast<double>(coroutines));
  out.family("gateway_event_loop_lag_seconds", "histogram",
             "How late a periodic timer fires on each I/O thread; a long tail means blocking.");
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    out.histogram_sample("gateway_event_loop_lag_seconds", {{"io_thread", std::to_string(i)}},
                         workers_[i]->loop_lag_.read());
  }
}

}  // namespace gateway

namespace gateway {

metrics_summary metrics_registry::summarize() const {
  metrics_summary s;
  {
    const std::lock_guard hold(rows_->lock);
    const auto& r = *rows_;
    for (std::size_t i = 1; i < r.routes.size(); ++i) {
      const auto& row = r.routes[i];
      auto& out = s.routes.emplace_back();
      out.path = row.path;
      for (const auto& p : row.parts) {
        for (std::size_t k = 0; k < p.duration.size(); ++k) {
          const auto h = p.duration[k].read();
          out.duration += h;
          const auto slot = k % status_slots;
          if (slot < status_codes.size() && status_codes[slot] >= 500) out.server_errors += h.count();
        }
        out.degraded += p.degraded.load(std::memory_order_relaxed);
      }
    }
    for (const auto& row : r.downstreams) {
      auto& out = s.downstreams.emplace_back();
      out.name = row.name;
      for (const auto& p : row.parts) {
        for (std::size_t o = 0; o < outcome_label_count; ++o) {
          const auto h = p.duration[o].read();
          out.calls[o] += h.count();
          out.duration += h;
        }
      }
    }
  }
  for (const auto& w : workers_) {
    s.coroutines += w->coroutines_.load(std::memory_order_relaxed);
    s.loop_lag += w->loop_lag_.read();
    s.disconnects += w->disconnects_.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < s.shed.size(); ++i) s.shed[i] += w->shed_[i].load(std::memory_order_relaxed);
  }
  return s;
}

}  // namespace gateway
