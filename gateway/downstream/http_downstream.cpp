#include "gateway/downstream/http_downstream.hpp"

#include "gateway/downstream/endpoint_breakers.hpp"
#include "gateway/downstream/http_call.hpp"
#include "gateway/downstream/http_endpoints.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace gateway {

http_downstream::http_downstream(const downstream_settings& settings,
                                 const std::vector<boost::asio::io_context*>& workers,
                                 host_resolver& resolver)
    : settings_(settings), head_(settings_) {
  // Where calls go: the url's host, or each configured endpoint; every address of each is an endpoint.
  std::vector<std::shared_ptr<const resolved_address>> sources;
  if (settings_.endpoints.empty()) {
    sources.push_back(resolver.add(settings_.name, settings_.host, settings_.port, settings_.dns_refresh));
  }
  for (const auto& e : settings_.endpoints) {
    sources.push_back(resolver.add(settings_.name, e.host, e.port, settings_.dns_refresh));
  }
  // Each I/O thread keeps an equal share, at least one: fewer connections than threads would be exceeded.
  if (settings_.max_connections < workers.size()) {
    throw std::runtime_error("downstream '" + settings_.name + "': max_connections " +
                             std::to_string(settings_.max_connections) + " is less than the " +
                             std::to_string(workers.size()) +
                             " I/O threads (each keeps its own connections): raise it or set server.threads");
  }
  const std::size_t per_worker = settings_.max_connections / std::max<std::size_t>(1, workers.size());
  // The connect ramp likewise, at least one connect at a time per thread.
  const std::size_t connecting_per_worker =
      std::max<std::size_t>(1, settings_.max_connecting / std::max<std::size_t>(1, workers.size()));
  if (settings_.breaker.enabled && settings_.breaker.per_endpoint)
    breakers_ = std::make_unique<endpoint_breakers>(settings_.name, settings_.breaker);
  for (auto* ioc : workers) {
    lanes_.push_back(std::make_unique<http_endpoints>(ioc->get_executor(), sources, per_worker,
                                                      connecting_per_worker, settings_, breakers_.get()));
    if (settings_.coalesce) {
      lanes_.back()->enable_coalescing([this, lane = lanes_.back().get()](const call_request& request,
                                                                          call_sink& sink, std::size_t index,
                                                                          std::string lead) {
        http_call::start(head_, *lane, request, sink, index, std::move(lead));
      });
    }
  }
}

http_downstream::~http_downstream() = default;

bool http_downstream::start(const call_request& request, call_sink& sink, std::size_t index) {
  auto& lane = *lanes_.at(request.thread_index);
  if (auto* coalescer = lane.coalescer(); coalescer != nullptr && request.method == "GET") {
    coalescer->start(request, sink, index);
  } else {
    http_call::start(head_, lane, request, sink, index);
  }
  return true;
}

std::uint64_t http_downstream::retries() const {
  std::uint64_t n = 0;
  for (const auto& lane : lanes_) n += lane->retries();
  return n;
}

std::uint64_t http_downstream::ejections() const {
  std::uint64_t n = 0;
  for (const auto& lane : lanes_) n += lane->ejections();
  return n;
}

unsigned http_downstream::endpoint_count() const {
  return lanes_.empty() ? 0 : lanes_.front()->endpoint_count();
}

std::uint64_t http_downstream::coalesced() const {
  std::uint64_t n = 0;
  for (const auto& lane : lanes_) {
    if (auto* c = lane->coalescer()) n += c->coalesced();
  }
  return n;
}

std::uint64_t http_downstream::tls_handshakes(bool resumed) const {
  std::uint64_t n = 0;
  for (const auto& lane : lanes_) {
    const auto& counts = lane->handshakes();
    n += (resumed ? counts.resumed : counts.full).load(std::memory_order_relaxed);
  }
  return n;
}

std::uint64_t http_downstream::hedges() const {
  std::uint64_t n = 0;
  for (const auto& lane : lanes_) n += lane->hedges();
  return n;
}

void http_downstream::close_idle(std::size_t thread_index) {
  lanes_.at(thread_index)->close_idle();
}

}  // namespace gateway
