#include "gateway/observe/metrics.hpp"

#include "gateway/observe/prometheus.hpp"

#include <array>

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

constexpr std::array<call_outcome, call_outcome_count> outcomes{
    call_outcome::ok,       call_outcome::timeout,      call_outcome::error, call_outcome::cancelled,
    call_outcome::rejected, call_outcome::circuit_open, call_outcome::stale};

}  // namespace

worker_metrics::worker_metrics(const gateway_config& config)
    : request_duration_((config.routes.size() + 1) * methods.size() * status_slots),
      call_duration_(config.downstreams.size() * outcome_count),
      degraded_(config.routes.size()),
      proxy_bytes_(config.routes.size() * 2) {
  std::size_t calls = 0;
  for (const auto& route : config.routes) {
    call_offset_.push_back(calls);
    calls += route.calls.size();
  }
  fallbacks_ = std::vector<counter>(calls);
}

void worker_metrics::request_done(int route, std::string_view method, unsigned status,
                                  clock::duration elapsed) {
  const auto row = static_cast<std::size_t>(route + 1) * methods.size() + method_slot(method);
  request_duration_[row * status_slots + status_slot(status)].observe(elapsed);
}

metrics_registry::metrics_registry(const gateway_config& config, std::size_t workers) : config_(config) {
  for (std::size_t i = 0; i < workers; ++i) workers_.push_back(std::make_unique<worker_metrics>(config));
}

void metrics_registry::render(prometheus_writer& out, std::size_t active_requests) const {
  auto sum_histograms = [&](auto member, std::size_t index) {
    histogram::snapshot total;
    for (const auto& w : workers_) total += ((*w).*member)[index].read();
    return total;
  };
  auto sum_counters = [&](auto member, std::size_t index) {
    std::uint64_t total = 0;
    for (const auto& w : workers_) total += ((*w).*member)[index].load(std::memory_order_relaxed);
    return static_cast<double>(total);
  };

  out.family("http_server_request_duration_seconds", "histogram",
             "Duration of inbound HTTP requests, from the request head to the response written.");
  for (std::size_t r = 0; r <= config_.routes.size(); ++r) {
    const std::string_view route = r > 0 ? std::string_view(config_.routes[r - 1].path) : "unmatched";
    for (std::size_t m = 0; m < methods.size(); ++m) {
      const std::size_t row = r * methods.size() + m;
      for (std::size_t slot = 0; slot < status_slots; ++slot) {
        const auto h = sum_histograms(&worker_metrics::request_duration_, row * status_slots + slot);
        if (h.count() == 0) continue;
        const std::string code = slot < status_codes.size() ? std::to_string(status_codes[slot]) : "other";
        out.histogram_sample("http_server_request_duration_seconds",
                             {{"route", route}, {"method", methods[m]}, {"status_code", code}}, h);
      }
    }
  }
  out.family("http_server_active_requests", "gauge", "Inbound requests being handled.");
  out.sample("http_server_active_requests", {}, static_cast<double>(active_requests));

  out.family(
      "http_client_request_duration_seconds", "histogram",
      "Duration of downstream calls by outcome (ok, timeout, error, cancelled, rejected, circuit_open).");
  std::vector<std::pair<std::size_t, histogram::snapshot>> calls;
  for (std::size_t d = 0; d < config_.downstreams.size(); ++d) {
    for (std::size_t o = 0; o < outcomes.size(); ++o) {
      const auto h = sum_histograms(&worker_metrics::call_duration_, d * worker_metrics::outcome_count + o);
      if (h.count() == 0) continue;
      out.histogram_sample("http_client_request_duration_seconds",
                           {{"downstream", config_.downstreams[d].name}, {"outcome", to_string(outcomes[o])}},
                           h);
      calls.emplace_back(d * worker_metrics::outcome_count + o, h);
    }
  }
  out.family("gateway_downstream_calls_total", "counter", "Downstream calls by outcome.");
  for (const auto& [index, h] : calls) {
    const auto d = index / worker_metrics::outcome_count;
    const auto o = index % worker_metrics::outcome_count;
    out.sample("gateway_downstream_calls_total",
               {{"downstream", config_.downstreams[d].name}, {"outcome", to_string(outcomes[o])}},
               static_cast<double>(h.count()));
  }

  out.family("gateway_degraded_responses_total", "counter", "Responses with at least one degraded entry.");
  for (std::size_t r = 0; r < config_.routes.size(); ++r) {
    out.sample("gateway_degraded_responses_total", {{"route", config_.routes[r].path}},
               sum_counters(&worker_metrics::degraded_, r));
  }
  out.family("gateway_proxy_bytes_total", "counter",
             "Body bytes through pass-through routes: the client's to the downstream (request), the "
             "downstream's to the client (response).");
  for (std::size_t r = 0; r < config_.routes.size(); ++r) {
    if (!config_.routes[r].proxy) continue;
    out.sample("gateway_proxy_bytes_total", {{"route", config_.routes[r].path}, {"direction", "request"}},
               sum_counters(&worker_metrics::proxy_bytes_, r * 2));
    out.sample("gateway_proxy_bytes_total", {{"route", config_.routes[r].path}, {"direction", "response"}},
               sum_counters(&worker_metrics::proxy_bytes_, r * 2 + 1));
  }
  out.family("gateway_fallbacks_total", "counter", "Entries replaced by their fallback.");
  for (std::size_t r = 0; r < config_.routes.size(); ++r) {
    const auto offset = workers_.front()->call_offset_[r];
    for (std::size_t c = 0; c < config_.routes[r].calls.size(); ++c) {
      out.sample("gateway_fallbacks_total",
                 {{"route", config_.routes[r].path}, {"call", config_.routes[r].calls[c].name}},
                 sum_counters(&worker_metrics::fallbacks_, offset + c));
    }
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
  if (config_.server.tls.enabled) {
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
