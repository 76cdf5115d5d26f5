#pragma once
// The circuit breakers of one downstream's endpoints, one per address and shared by every I/O thread's
// lane (an endpoint's failures are judged over all its calls, not one thread's share). A lane takes its
// endpoint's breaker when it makes the endpoint; a breaker no lane holds any more (its address went away
// on a DNS refresh) is dropped at the next lookup. The metrics read them from another thread: every
// member function takes the mutex, and none is on a call's path (only endpoint creation and metrics).

#include "gateway/config/config.hpp"
#include "gateway/downstream/circuit_breaker.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gateway {

class endpoint_breakers {
 public:
  endpoint_breakers(std::string downstream, const breaker_settings& settings);

  // The breaker of `address`, made at its first lookup.
  std::shared_ptr<circuit_breaker> at(const boost::asio::ip::tcp::endpoint& address);

  // The breakers some lane still holds, by address (for the metrics).
  std::vector<std::shared_ptr<const circuit_breaker>> all() const;

 private:
  const std::string downstream_;
  const breaker_settings& settings_;
  mutable std::mutex mutex_;
  std::map<boost::asio::ip::tcp::endpoint, std::shared_ptr<circuit_breaker>> by_address_;
};

}  // namespace gateway
