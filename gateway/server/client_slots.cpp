#include "gateway/server/client_slots.hpp"

#include <cstring>

namespace gateway {

std::size_t client_slots::hash::operator()(const address& a) const noexcept {
  std::uint64_t hi = 0, lo = 0;
  std::memcpy(&hi, a.data(), 8);
  std::memcpy(&lo, a.data() + 8, 8);
  return static_cast<std::size_t>(hi * 0x9E3779B97F4A7C15ull ^ lo);
}

bool client_slots::take(const address& a) {
  if (cap_ == 0) return true;
  std::lock_guard lock(mutex_);
  auto& n = open_[a];
  if (n >= cap_) return false;
  ++n;
  return true;
}

void client_slots::give(const address& a) {
  if (cap_ == 0) return;
  std::lock_guard lock(mutex_);
  const auto it = open_.find(a);
  if (it == open_.end()) return;
  if (--it->second == 0) open_.erase(it);
}

}  // namespace gateway
