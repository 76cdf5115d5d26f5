#pragma once
// A fixed-bucket histogram of seconds for Prometheus: observe() is lock-free (relaxed atomics), so any
// thread may record on its hot path; a scrape reads a snapshot that may be a moment stale, never torn
// per bucket.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace gateway {

class histogram {
 public:
  // Upper bounds in seconds, shared by every histogram (latency-shaped: 0.5 ms .. 10 s).
  static constexpr std::array<double, 16> bounds{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                 0.25,   0.5,   0.75,   1.0,   2.5,  5.0,   7.5,  10.0};

  void observe(std::chrono::nanoseconds elapsed) {
    const double seconds = std::chrono::duration<double>(elapsed).count();
    std::size_t i = 0;
    while (i < bounds.size() && seconds > bounds[i]) ++i;
    buckets_[i].fetch_add(1, std::memory_order_relaxed);
    sum_ns_.fetch_add(static_cast<std::uint64_t>(elapsed.count() > 0 ? elapsed.count() : 0),
                      std::memory_order_relaxed);
  }

  struct snapshot {
    std::array<std::uint64_t, bounds.size() + 1> counts{};  // per bucket, not cumulative; last = +Inf
    double sum_seconds = 0;
    snapshot& operator+=(const snapshot& other) {
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
    for (std::size_t i = 0; i < buckets_.size(); ++i)
      s.counts[i] = buckets_[i].load(std::memory_order_relaxed);
    s.sum_seconds = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;
    return s;
  }

 private:
  std::array<std::atomic<std::uint64_t>, bounds.size() + 1> buckets_{};
  std::atomic<std::uint64_t> sum_ns_{0};
};

}  // namespace gateway
