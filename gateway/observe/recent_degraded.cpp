#include "gateway/observe/recent_degraded.hpp"

#include <chrono>
#include <utility>

namespace gateway {

recent_degraded::recent_degraded(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {
  ring_.reserve(capacity_);
}

void recent_degraded::record(std::string_view request_id, std::string_view path, const aggregate_route& route,
                             const std::vector<call_result>& results) {
  // Built before the lock: only the move into the ring is serialized.
  entry e;
  e.request_id = std::string(request_id);
  e.route = std::string(path);
  e.time = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (std::size_t i = 0; i < route.calls.size() && i < results.size(); ++i) {
    const auto& r = results[i];
    if (r.ok()) continue;
    e.calls.push_back({route.calls[i].name, route.calls[i].downstream,
                       std::string(outcome_label(r.label_index())), failure_detail(r),
                       std::chrono::duration<double, std::milli>(r.latency).count()});
  }
  const std::lock_guard hold(lock_);
  if (ring_.size() < capacity_) {
    ring_.push_back(std::move(e));
  } else {
    ring_[next_ % capacity_] = std::move(e);
  }
  ++next_;
}

std::vector<recent_degraded::entry> recent_degraded::newest_first() const {
  const std::lock_guard hold(lock_);
  std::vector<entry> out;
  out.reserve(ring_.size());
  for (std::size_t i = 0; i < ring_.size(); ++i) out.push_back(ring_[(next_ - 1 - i) % capacity_]);
  return out;
}

std::uint64_t recent_degraded::recorded() const {
  const std::lock_guard hold(lock_);
  return next_;
}

}  // namespace gateway
