#pragma once
// The upper bounds, in seconds, of a histogram's finite buckets: sorted, distinct, at most `capacity`.
// A set is immutable once made and outlives every histogram that uses it (latency() is static, the
// metrics registry keeps its own for the life of the process), so the `le` labels of a series never change.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <vector>

namespace gateway {

class histogram_bounds {
 public:
  static constexpr std::size_t capacity = 32;

  // The latency-shaped grid every histogram starts from: 0.5 ms .. 10 s, 16 bounds.
  static const histogram_bounds& latency();

  // The latency grid plus, for each deadline, bounds at d, 1.02 d, 1.05 d and 1.1 d (rounded to 0.1 ms):
  // an answer that waited for its deadline lands in a bucket 2% wide, so a quantile interpolated inside
  // it is off by at most 2%. Deadlines are taken in the order given while the set has room for all four
  // of a deadline's bounds; covers() tells which made it.
  static histogram_bounds with_deadlines(const std::vector<std::chrono::microseconds>& deadlines);

  // The bucket of `seconds`: the first bound not below it, size() for the +Inf bucket. A binary search
  // over at most `capacity` doubles: no allocation, safe on any hot path.
  std::size_t bucket(double seconds) const {
    return static_cast<std::size_t>(std::lower_bound(begin(), end(), seconds) - begin());
  }
  // Whether `deadline` got its bounds (at d and 1.02 d).
  bool covers(std::chrono::microseconds deadline) const;

  std::size_t size() const { return size_; }
  double operator[](std::size_t i) const { return values_[i]; }
  double back() const { return values_[size_ - 1]; }
  const double* begin() const { return values_.data(); }
  const double* end() const { return values_.data() + size_; }
  bool operator==(const histogram_bounds& other) const {
    return std::equal(begin(), end(), other.begin(), other.end());
  }

 private:
  histogram_bounds() = default;
  bool add(const std::vector<double>& seconds);  // all of them or none

  std::array<double, capacity> values_{};
  std::size_t size_ = 0;
};

}  // namespace gateway
