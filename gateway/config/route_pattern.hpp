#pragma once
// What a route's path matches: exactly one path ("/api/offer"), a template whose segments may be named
// parameters ("/api/product/{id}", the last one possibly a catch-all "/files/{rest*}"), or every path
// under a prefix ("/legacy/", a route's `path_prefix`). Parsed once at config load; matched per request.
// Pure.
//
// Matching is on the path as sent (percent-encoded): literal segments compare byte for byte; a parameter
// takes one whole, non-empty segment, a catch-all the rest of the path (zero or more segments). Captures
// are views into the path, still encoded (route_params decodes and validates them).
//
// Precedence, when several routes match a path: exact before template before prefix; among templates,
// segment by segment, a literal before a parameter before a catch-all; among prefixes, the longest.
// Two templates of one method that match the same paths (same literals, parameters in the same places)
// are a conflict, refused at load.

#include <boost/container/small_vector.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gateway {

class route_pattern {
 public:
  enum class kind : unsigned char { exact, templated, prefix };
  using captures = boost::container::small_vector<std::string_view, 4>;

  // nullopt and `error` set when `text` is not a path ('/' first; no query, fragment, space or control
  // character), or its braces are not whole segments "{name}" with a valid name, a catch-all not last,
  // or a name used twice, or a '*' stands outside a catch-all's braces (it is no wildcard; the error
  // says to use a path_prefix or a catch-all instead).
  static std::optional<route_pattern> parse_path(std::string_view text, std::string& error);
  static std::optional<route_pattern> parse_prefix(std::string_view text, std::string& error);

  kind type() const { return kind_; }
  const std::string& text() const { return text_; }
  // The names of the parameters in the path, in order; the catch-all (if any) last.
  const std::vector<std::string>& names() const { return names_; }
  bool has_catch_all() const { return catch_all_; }

  // Whether `path` (no query) matches; `out` gets one capture per name.
  bool match(std::string_view path, captures& out) const;

  // Whether `a` is tried before `b` (both templates, or both prefixes).
  static bool before(const route_pattern& a, const route_pattern& b);
  // Whether two templates match exactly the same paths.
  static bool same_paths(const route_pattern& a, const route_pattern& b);

 private:
  enum class segment_kind : unsigned char { literal, param, catch_all };  // also the precedence order
  struct segment {
    segment_kind type = segment_kind::literal;
    std::string text;  // the literal, or the parameter's name
  };

  kind kind_ = kind::exact;
  std::string text_;
  std::vector<segment> segments_;  // templates only
  std::vector<std::string> names_;
  bool catch_all_ = false;
};

}  // namespace gateway
