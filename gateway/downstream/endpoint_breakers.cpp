#include "gateway/downstream/endpoint_breakers.hpp"

namespace gateway {

endpoint_breakers::endpoint_breakers(std::string downstream, const breaker_settings& settings)
    : downstream_(std::move(downstream)), settings_(settings) {}

std::shared_ptr<circuit_breaker> endpoint_breakers::at(const boost::asio::ip::tcp::endpoint& address) {
  std::lock_guard lock(mutex_);
  std::erase_if(by_address_, [](const auto& entry) { return entry.second.use_count() == 1; });
  auto& breaker = by_address_[address];
  if (!breaker) {
    const auto ip = address.address().to_string();
    const auto name =
        (address.address().is_v6() ? "[" + ip + "]" : ip) + ":" + std::to_string(address.port());
    breaker = std::make_shared<circuit_breaker>(downstream_, settings_, name);
  }
  return breaker;
}

std::vector<std::shared_ptr<const circuit_breaker>> endpoint_breakers::all() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<const circuit_breaker>> out;
  for (const auto& [address, breaker] : by_address_) {
    if (breaker.use_count() > 1) out.push_back(breaker);
  }
  return out;
}

}  // namespace gateway
