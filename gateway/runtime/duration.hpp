#pragma once
// Durations as written in the configuration ("150ms", "2s", "1m", "500us") and the clock used everywhere.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace gateway {

using clock = std::chrono::steady_clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;

// Parses "<digits><unit>" with unit us|ms|s|m; returns nullopt for anything else (no sign, no spaces,
// no fractions, no overflow).
std::optional<microseconds> parse_duration(std::string_view text);

// The inverse: "800ms", "2s", "1m", "500us", the largest unit that writes the duration exactly.
std::string format_duration(microseconds d);

// Milliseconds left until `deadline`, never negative.
inline long long millis_left(clock::time_point deadline, clock::time_point now = clock::now()) {
  auto left = std::chrono::duration_cast<milliseconds>(deadline - now).count();
  return left > 0 ? left : 0;
}

}  // namespace gateway
