#include "gateway/runtime/duration.hpp"

#include <charconv>
#include <limits>

namespace gateway {

std::optional<microseconds> parse_duration(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 12) return std::nullopt;
  long long value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + digits, value);
  if (ec != std::errc{} || ptr != text.data() + digits) return std::nullopt;
  const std::string_view unit = text.substr(digits);
  long long scale = 0;
  if (unit == "us") {
    scale = 1;
  } else if (unit == "ms") {
    scale = 1000;
  } else if (unit == "s") {
    scale = 1000 * 1000;
  } else if (unit == "m") {
    scale = 60LL * 1000 * 1000;
  } else {
    return std::nullopt;
  }
  if (value > std::numeric_limits<long long>::max() / scale) return std::nullopt;
  return microseconds(value * scale);
}

std::string format_duration(microseconds d) {
  const auto us = d.count();
  if (us != 0 && us % 60'000'000 == 0) return std::to_string(us / 60'000'000) + "m";
  if (us != 0 && us % 1'000'000 == 0) return std::to_string(us / 1'000'000) + "s";
  if (us % 1'000 == 0) return std::to_string(us / 1'000) + "ms";
  return std::to_string(us) + "us";
}

}  // namespace gateway
