#pragma once
// A fixed-bucket histogram of seconds for Prometheus: observe() is lock-free (relaxed atomics) and
// allocation-free, so any thread may record on its hot path; a scrape reads a snapshot that may be a
// moment stale, never torn per bucket. Its bounds are chosen at construction and never change.

#include "gateway/runtime/histogram_bounds.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace gateway {

class histogram {
 public:
  // `bounds` outlives the histogram.
  explicit histogram(const histogram_bounds& bounds = histogram_bounds::latency()) : bounds_(&bounds) {}

  void observe(std::chrono::nanoseconds elapsed) {
    buckets_[bounds_->bucket(std::chrono::duration<double>(elapsed).count())].fetch_add(
        1, std::memory_order_relaxed);
    sum_ns_.fetch_add(static_cast<std::uint64_t>(elapsed.count() > 0 ? elapsed.count() : 0),
                      std::memory_order_relaxed);
  }

  struct snapshot {
    const histogram_bounds* bounds = &histogram_bounds::latency();
    // Per bucket, not cumulative: counts[i] for bounds[i], counts[bounds->size()] for +Inf, the rest 0.
    std::array<std::uint64_t, histogram_bounds::capacity + 1> counts{};
    double sum_seconds = 0;
    // Adds a snapshot of the same bounds; an empty one (nothing added yet) takes the other's bounds.
    snapshot& operator+=(const snapshot& other) {
      if (count() == 0) bounds = other.bounds;
      for (std::size_t i = 0; i < counts.size(); ++i) counts[i] += other.counts[i];
      sum_seconds += other.sum_seconds;
      return *this;
    }
    std::uint64_t count() const {
      std::uint64_t n = 0;
      for (auto c : counts) n += c;
      return n;
    }
  };
  snapshot read() const {
    snapshot s;
    s.bounds = bounds_;
    for (std::size_t i = 0; i <= bounds_->size(); ++i)
      s.counts[i] = buckets_[i].load(std::memory_order_relaxed);
    s.sum_seconds = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;
    return s;
  }

 private:
  const histogram_bounds* bounds_;
  std::array<std::atomic<std::uint64_t>, histogram_bounds::capacity + 1> buckets_{};
  std::atomic<std::uint64_t> sum_ns_{0};
};

}  // namespace gateway
