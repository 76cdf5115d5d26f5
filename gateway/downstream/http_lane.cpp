#include "gateway/downstream/http_lane.hpp"

#include <algorithm>

namespace gateway {

namespace {

constexpr clock::duration bucket_width = std::chrono::seconds(5);
constexpr std::size_t min_samples = 20;  // fewer good latencies: no percentile yet (max_delay)
constexpr std::size_t recompute_every = 16;

}  // namespace

http_lane::http_lane(boost::asio::any_io_executor ex, std::shared_ptr<const resolved_address> address,
                     std::size_t cap, const downstream_settings& settings)
    : pool_(std::move(ex), std::move(address), cap, settings.connect_timeout, settings.idle_timeout),
      settings_(settings),
      random_(static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(this))) {}

void http_lane::call_started(clock::time_point now) {
  ++calls_;
  if (!settings_.hedge.enabled) return;
  roll_window(now);
  ++window_calls_[0];
}

bool http_lane::try_retry() {
  const auto& r = settings_.retry;
  const auto allowed = std::max<std::uint64_t>(r.budget_min, std::uint64_t{calls_} * r.budget_percent / 100);
  if (retries_ >= allowed) return false;
  ++retries_;
  retries_total_.store(retries_total_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return true;
}

bool http_lane::try_hedge(clock::time_point now) {
  roll_window(now);
  const auto calls = std::uint64_t{window_calls_[0]} + window_calls_[1];
  const auto hedges = std::uint64_t{window_hedges_[0]} + window_hedges_[1];
  if ((hedges + 1) * 100 > calls * settings_.hedge.budget_percent) return false;
  ++window_hedges_[0];
  hedges_total_.store(hedges_total_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return true;
}

clock::duration http_lane::hedge_delay() const {
  const auto& h = settings_.hedge;
  clock::duration delay = h.delay;
  if (delay.count() == 0) delay = recorded_ >= min_samples ? percentile_ : clock::duration(h.max_delay);
  return std::clamp<clock::duration>(delay, h.min_delay, h.max_delay);
}

void http_lane::record_latency(clock::duration latency) {
  if (!settings_.hedge.enabled || settings_.hedge.delay.count() > 0) return;
  latencies_[recorded_ % samples] = latency;
  ++recorded_;
  if (recorded_ < min_samples || recorded_ % recompute_every != 0) return;
  const std::size_t n = std::min(recorded_, samples);
  std::array<clock::duration, samples> sorted;
  std::copy_n(latencies_.begin(), n, sorted.begin());
  const std::size_t at = std::min(n - 1, n * settings_.hedge.percentile / 100);
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(at),
                   sorted.begin() + static_cast<std::ptrdiff_t>(n));
  percentile_ = sorted[at];
}

clock::duration http_lane::jitter(clock::duration limit) {
  if (limit.count() <= 0) return clock::duration(0);
  std::uniform_int_distribution<clock::duration::rep> pick(0, limit.count());
  return clock::duration(pick(random_));
}

void http_lane::roll_window(clock::time_point now) {
  const auto bucket = now.time_since_epoch() / bucket_width;
  if (bucket == bucket_) return;
  if (bucket == bucket_ + 1) {
    window_calls_[1] = window_calls_[0];
    window_hedges_[1] = window_hedges_[0];
  } else {
    window_calls_[1] = window_hedges_[1] = 0;
  }
  window_calls_[0] = window_hedges_[0] = 0;
  bucket_ = bucket;
}

}  // namespace gateway
