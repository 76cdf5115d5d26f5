#pragma once
// Arithmetic on unix seconds that saturates at the limits of int64 instead of wrapping, so that an exp,
// nbf or leeway near a limit cannot turn a token's time window inside out. Pure.

#include <cstdint>
#include <limits>

namespace gateway {

inline std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
}

}  // namespace gateway
