#pragma once
// An HTTP/1.1 downstream: GET requests over keep-alive connections, one lane per I/O thread (http_endpoints:
// the thread's endpoints, one per address, each with its own pool of at most max_connections / threads
// connections, so that no lock is needed on the hot path). Host names are resolved in the background
// (host_resolver).
// A call (http_call) answers ok only for a 2xx response whose body is a JSON object within
// max_response_bytes.

#include "gateway/config/config.hpp"
#include "gateway/downstream/downstream.hpp"
#include "gateway/downstream/request_head.hpp"

#include <boost/asio/io_context.hpp>

#include <memory>
#include <vector>

namespace gateway {

class endpoint_breakers;
class host_resolver;
class http_endpoints;

class http_downstream final : public downstream {
 public:
  // Registers the host with `resolver`, which must be started before calls and outlive nothing: the
  // pools share the resolved address. Throws std::runtime_error when max_connections is less than the
  // number of `workers`.
  http_downstream(const downstream_settings& settings, const std::vector<boost::asio::io_context*>& workers,
                  host_resolver& resolver);
  ~http_downstream() override;

  // Starts an http_call on the pool of the request's I/O thread; always true.
  bool start(const call_request& request, call_sink& sink, std::size_t index) override;
  void close_idle(std::size_t thread_index) override;
  // From the pool of the picked endpoint of the I/O thread's lane (http_proxy_link.cpp).
  std::unique_ptr<proxy_link> lease(const lease_request& request, boost::asio::yield_context yield,
                                    lease_failure& why) override;

  const std::string& name() const { return settings_.name; }
  // Retries and hedges started so far, over every I/O thread (for the metrics; any thread).
  std::uint64_t retries() const;
  std::uint64_t hedges() const;
  std::uint64_t ejections() const;  // endpoint ejections, summed over the I/O threads
  std::uint64_t coalesced() const;  // calls that shared another's downstream request
  unsigned endpoint_count() const;  // addresses it balances over now
  bool tls() const { return settings_.tls.enabled; }
  // TLS handshakes so far (https), over every I/O thread: full ones, or resumed ones (`resumed`).
  std::uint64_t tls_handshakes(bool resumed) const;
  // Its endpoints' circuit breakers (circuit_breaker.per_endpoint); null when off.
  const endpoint_breakers* breakers() const { return breakers_.get(); }

 private:
  downstream_settings settings_;
  request_head head_;
  std::unique_ptr<endpoint_breakers> breakers_;
  std::vector<std::unique_ptr<http_endpoints>> lanes_;  // indexed by thread_index; they use breakers_
};

}  // namespace gateway
