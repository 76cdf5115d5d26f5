#pragma once
// A route parameter's `pattern`: an RE2 regular expression that the whole value must match (FullMatch).
// RE2 matches in time linear in the value's length and keeps its state on the heap, so any pattern is safe
// on a connection's 64 KiB coroutine stack; patterns RE2 cannot run that way (backreferences, lookaround)
// are refused when the config loads. Pattern and value are UTF-8: `.` and classes match whole characters,
// and bytes that are not valid UTF-8 match no `.` and no class. A value longer than `max_value_bytes` is
// rejected without matching. The common form, one bracket class of ASCII characters with a count
// (`^[A-Za-z0-9_-]{1,64}$`, `[0-9]+`), is answered by a byte table and a length check instead, which is
// several times cheaper and gives RE2's answer (unit-tested against RE2).

#include "gateway/codec/char_class.hpp"

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace gateway {

// ^[set]{min,max}$ with a set of literal ASCII characters and ranges (anchors optional: the match is
// whole anyway).
struct char_class_pattern {
  char_class::chars allowed = "";  // none until compile() adds them
  std::size_t min = 1;
  std::size_t max = 1;

  // The pattern in this form, or nothing when it has any other feature.
  static std::optional<char_class_pattern> compile(std::string_view pattern);
  bool matches(std::string_view value) const;
};

class param_pattern {
 public:
  static constexpr std::size_t default_max_value_bytes = 4 * 1024;
  static constexpr std::size_t max_memory_bytes = 1024 * 1024;  // RE2's budget: program and DFA caches

  // The compiled pattern, or null with `error` set when RE2 refuses it (bad syntax, a feature RE2 does
  // not have, a program larger than max_memory_bytes).
  static std::unique_ptr<const param_pattern> compile(const std::string& pattern, std::string& error,
                                                      std::size_t max_value_bytes = default_max_value_bytes);

  param_pattern(const param_pattern&) = delete;
  param_pattern& operator=(const param_pattern&) = delete;
  ~param_pattern();

  // Safe to call from any thread at once; never throws.
  bool matches(std::string_view value) const;

 private:
  param_pattern(std::unique_ptr<const re2::RE2> re2, std::size_t max_value_bytes);

  std::unique_ptr<const re2::RE2> re2_;
  std::optional<char_class_pattern> fast_;
  std::size_t max_value_bytes_;
};

}  // namespace gateway
