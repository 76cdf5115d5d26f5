#include "gateway/runtime/histogram_bounds.hpp"

#include <cmath>

namespace gateway {
namespace {

constexpr std::array<double, 16> latency_grid{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                              0.25,   0.5,   0.75,   1.0,   2.5,  5.0,   7.5,  10.0};

// Bounds are written in `le` labels: 0.1 ms steps keep them short ("0.51", not "0.51000000000000001").
double rounded(double seconds) {
  return std::round(seconds * 1e4) / 1e4;
}

// Relative to the deadline: at it, then the widths an answer that waited for it falls into.
constexpr std::array<double, 4> deadline_steps{1.0, 1.02, 1.05, 1.1};

}  // namespace

const histogram_bounds& histogram_bounds::latency() {
  static const histogram_bounds grid = [] {
    histogram_bounds b;
    b.add({latency_grid.begin(), latency_grid.end()});
    return b;
  }();
  return grid;
}

histogram_bounds histogram_bounds::with_deadlines(const std::vector<std::chrono::microseconds>& deadlines) {
  histogram_bounds b = latency();
  for (const auto d : deadlines) {
    const double seconds = std::chrono::duration<double>(d).count();
    if (seconds < 0.001) continue;  // below the 0.1 ms steps' resolution to matter
    std::vector<double> wanted;
    for (const double step : deadline_steps) wanted.push_back(rounded(seconds * step));
    b.add(wanted);
  }
  return b;
}

bool histogram_bounds::covers(std::chrono::microseconds deadline) const {
  const double seconds = std::chrono::duration<double>(deadline).count();
  auto has = [&](double v) { return std::binary_search(begin(), end(), rounded(v)); };
  return has(seconds * deadline_steps[0]) && has(seconds * deadline_steps[1]);
}

bool histogram_bounds::add(const std::vector<double>& seconds) {
  std::vector<double> merged(begin(), end());
  merged.insert(merged.end(), seconds.begin(), seconds.end());
  std::sort(merged.begin(), merged.end());
  merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
  if (merged.size() > capacity) return false;
  std::copy(merged.begin(), merged.end(), values_.begin());
  size_ = merged.size();
  return true;
}

}  // namespace gateway
