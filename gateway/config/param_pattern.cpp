#include "gateway/config/param_pattern.hpp"

#include <re2/re2.h>

namespace gateway {

namespace {

// Characters that stand for themselves inside an RE2 bracket class (and an ECMAScript one).
bool literal_in_class(char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return std::string_view("_-.~:@+%!$&*,;=/ ").find(c) != std::string_view::npos;
}

bool parse_count(std::string_view digits, std::size_t& out) {
  if (digits.empty() || digits.size() > 6) return false;
  out = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + static_cast<std::size_t>(c - '0');
  }
  return true;
}

}  // namespace

std::optional<char_class_pattern> char_class_pattern::compile(std::string_view p) {
  if (!p.empty() && p.front() == '^') p.remove_prefix(1);
  if (!p.empty() && p.back() == '$' && (p.size() < 2 || p[p.size() - 2] != '\\')) p.remove_suffix(1);
  if (p.size() < 3 || p.front() != '[') return std::nullopt;
  const auto close = p.find(']', 1);
  if (close == std::string_view::npos || close == 1) return std::nullopt;
  const auto set = p.substr(1, close - 1);
  char_class_pattern out;
  for (std::size_t i = 0; i < set.size(); ++i) {
    const char c = set[i];
    if (!literal_in_class(c)) return std::nullopt;
    // A '-' between two characters makes a range; first or last it is itself.
    if (i + 2 < set.size() && set[i + 1] == '-') {
      const char last = set[i + 2];
      if (!literal_in_class(last) || c == '-' || last == '-' || last < c) return std::nullopt;
      for (int x = c; x <= last; ++x) out.allowed = out.allowed + char_class::chars(static_cast<char>(x));
      i += 2;
      continue;
    }
    if (c == '-' && i != 0 && i + 1 != set.size()) return std::nullopt;
    out.allowed = out.allowed + char_class::chars(c);
  }
  const auto count = p.substr(close + 1);
  if (count.empty()) {
    out.min = out.max = 1;
  } else if (count == "+") {
    out.min = 1;
    out.max = static_cast<std::size_t>(-1);
  } else if (count == "*") {
    out.min = 0;
    out.max = static_cast<std::size_t>(-1);
  } else if (count.size() >= 3 && count.front() == '{' && count.back() == '}') {
    const auto inner = count.substr(1, count.size() - 2);
    const auto comma = inner.find(',');
    if (!parse_count(inner.substr(0, comma), out.min)) return std::nullopt;
    if (comma == std::string_view::npos) {
      out.max = out.min;
    } else if (comma + 1 == inner.size()) {
      out.max = static_cast<std::size_t>(-1);
    } else if (!parse_count(inner.substr(comma + 1), out.max) || out.max < out.min) {
      return std::nullopt;
    }
  } else {
    return std::nullopt;
  }
  return out;
}

bool char_class_pattern::matches(std::string_view value) const {
  if (value.size() < min || value.size() > max) return false;
  return char_class::all_of(value, allowed);
}

std::unique_ptr<const param_pattern> param_pattern::compile(const std::string& pattern, std::string& error,
                                                            std::size_t max_value_bytes) {
  re2::RE2::Options options;
  options.set_encoding(re2::RE2::Options::EncodingUTF8);
  options.set_max_mem(static_cast<std::int64_t>(max_memory_bytes));
  options.set_log_errors(false);    // the error is reported by the config loader
  options.set_never_capture(true);  // groups only group: nothing is extracted
  auto re2 = std::make_unique<const re2::RE2>(pattern, options);
  if (!re2->ok()) {
    error = re2->error();
    return nullptr;
  }
  return std::unique_ptr<const param_pattern>(new param_pattern(std::move(re2), max_value_bytes));
}

param_pattern::param_pattern(std::unique_ptr<const re2::RE2> re2, std::size_t max_value_bytes)
    : re2_(std::move(re2)),
      fast_(char_class_pattern::compile(re2_->pattern())),
      max_value_bytes_(max_value_bytes) {}

param_pattern::~param_pattern() = default;

bool param_pattern::matches(std::string_view value) const {
  if (value.size() > max_value_bytes_) return false;
  if (fast_) return fast_->matches(value);
  return re2::RE2::FullMatch(re2::StringPiece(value.data(), value.size()), *re2_);
}

}  // namespace gateway
