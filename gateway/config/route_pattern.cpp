#include "gateway/config/route_pattern.hpp"

#include "gateway/config/config_values.hpp"

#include <algorithm>

namespace gateway {

namespace {

std::string path_problem(std::string_view text) {
  const bool bad = text.empty() || text.front() != '/' || std::any_of(text.begin(), text.end(), [](char c) {
                     return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '?' || c == '#';
                   });
  return bad ? "route path must start with '/' and hold no query, fragment, space or control character" : "";
}

// A '*' outside a parameter's braces is no wildcard (it matches only itself), though it reads like one:
// refused, with what to write instead. "" when there is none.
std::string star_problem(std::string_view text, bool prefix) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '{') {
      i = std::min(text.find('}', i), text.size());
      continue;
    }
    if (text[i] != '*') continue;
    const std::string before(text.substr(0, text.rfind('/', i) + 1));
    const std::string use = "use path_prefix: " + before;
    if (prefix)
      return "'*' is no wildcard in a path_prefix (it takes every path that starts with it): " + use;
    return "'*' is no wildcard in a route path (it would match only a literal '*'): " + use +
           " or a catch-all {rest*} (" + before + "{rest*})";
  }
  return {};
}

// The segments of `path` after its leading '/': "/a/b" -> a, b; "/" -> one empty segment.
template <class Fn>
void each_segment(std::string_view path, Fn&& fn) {
  path.remove_prefix(1);
  for (;;) {
    const auto slash = path.find('/');
    if (!fn(path.substr(0, slash), path)) return;
    if (slash == std::string_view::npos) return;
    path.remove_prefix(slash + 1);
  }
}

}  // namespace

std::optional<route_pattern> route_pattern::parse_path(std::string_view text, std::string& error) {
  error = path_problem(text);
  if (error.empty()) error = star_problem(text, false);
  if (!error.empty()) return std::nullopt;
  route_pattern p;
  p.text_ = std::string(text);
  if (text.find_first_of("{}") == std::string_view::npos) return p;  // exact
  p.kind_ = kind::templated;
  each_segment(text, [&](std::string_view s, std::string_view) {
    if (p.catch_all_) {
      error = "a catch-all {name*} must be the last segment of a route path";
      return false;
    }
    if (s.find_first_of("{}") == std::string_view::npos) {
      p.segments_.push_back({segment_kind::literal, std::string(s)});
      return true;
    }
    if (s.size() < 3 || s.front() != '{' || s.back() != '}') {
      error = "a parameter must be a whole path segment, like /{id}/";
      return false;
    }
    std::string name(s.substr(1, s.size() - 2));
    const bool catch_all = !name.empty() && name.back() == '*';
    if (catch_all) name.pop_back();
    if (!valid_name(name)) {
      error = std::string("path parameter name ") + name_rule;
      return false;
    }
    if (std::find(p.names_.begin(), p.names_.end(), name) != p.names_.end()) {
      error = "path parameter '" + name + "' appears twice";
      return false;
    }
    p.catch_all_ = catch_all;
    p.names_.push_back(name);
    p.segments_.push_back({catch_all ? segment_kind::catch_all : segment_kind::param, std::move(name)});
    return true;
  });
  if (!error.empty()) return std::nullopt;
  return p;
}

std::optional<route_pattern> route_pattern::parse_prefix(std::string_view text, std::string& error) {
  error = path_problem(text);
  if (error.empty() && text.find_first_of("{}") != std::string_view::npos)
    error = "a path_prefix holds no parameters";
  if (error.empty()) error = star_problem(text, true);
  if (!error.empty()) return std::nullopt;
  route_pattern p;
  p.kind_ = kind::prefix;
  p.text_ = std::string(text);
  return p;
}

bool route_pattern::match(std::string_view path, captures& out) const {
  out.clear();
  switch (kind_) {
    case kind::exact:
      return path == text_;
    case kind::prefix:
      return path.starts_with(text_);
    case kind::templated:
      break;
  }
  if (path.empty() || path.front() != '/') return false;
  std::size_t at = 0;
  bool matched = true;
  each_segment(path, [&](std::string_view s, std::string_view rest) {
    if (at == segments_.size()) return matched = false;
    const auto& want = segments_[at++];
    switch (want.type) {
      case segment_kind::literal:
        matched = s == want.text;
        return matched;
      case segment_kind::param:
        if (s.empty()) return matched = false;
        out.push_back(s);
        return true;
      case segment_kind::catch_all:
        out.push_back(rest);
        return false;  // it takes the rest
    }
    return false;
  });
  // A path with fewer segments matches when only a catch-all is left ("/files" for "/files/{rest*}" does
  // not: the '/' before it is literal).
  return matched && at == segments_.size();
}

bool route_pattern::before(const route_pattern& a, const route_pattern& b) {
  if (a.kind_ == kind::prefix) return a.text_.size() > b.text_.size();
  const auto n = std::min(a.segments_.size(), b.segments_.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (a.segments_[i].type != b.segments_[i].type) return a.segments_[i].type < b.segments_[i].type;
  }
  return a.segments_.size() > b.segments_.size();
}

bool route_pattern::same_paths(const route_pattern& a, const route_pattern& b) {
  if (a.kind_ != b.kind_) return false;
  if (a.kind_ != kind::templated) return a.text_ == b.text_;
  if (a.segments_.size() != b.segments_.size()) return false;
  for (std::size_t i = 0; i < a.segments_.size(); ++i) {
    const auto& x = a.segments_[i];
    const auto& y = b.segments_[i];
    if (x.type != y.type || (x.type == segment_kind::literal && x.text != y.text)) return false;
  }
  return true;
}

}  // namespace gateway
