#pragma once
// A route parameter's `pattern`: an ECMAScript regular expression that the whole value must match. The
// common form, one bracket class with a count (`^[A-Za-z0-9_-]{1,64}$`, `[0-9]+`), is matched by a byte
// table and a length check instead of std::regex, which costs thousands of instructions per value; any
// other expression goes to std::regex. Both give the same answer (unit-tested against std::regex).

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>

namespace gateway {

// ^[set]{min,max}$ with a set of literal ASCII characters and ranges (anchors optional: the match is
// whole anyway).
struct char_class_pattern {
  std::array<bool, 256> allowed{};
  std::size_t min = 1;
  std::size_t max = 1;

  // The pattern in this form, or nothing when it has any other feature.
  static std::optional<char_class_pattern> compile(std::string_view pattern);
  bool matches(std::string_view value) const;
};

class param_pattern {
 public:
  // Throws std::regex_error for an invalid expression.
  explicit param_pattern(const std::string& pattern);
  bool matches(const std::string& value) const;

 private:
  std::optional<char_class_pattern> fast_;
  std::optional<std::regex> regex_;
};

}  // namespace gateway
