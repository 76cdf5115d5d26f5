#include "loadtest/mock/body_template.hpp"

#include "loadtest/mock/replies.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>

namespace mock {
namespace {

constexpr std::size_t max_segment = 127;  // a path name has at most 128 characters

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// A query parameter or header field name in a placeholder: what both usually are, and never a character
// that JSON escapes, so that the raw text of the string is the name.
bool is_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_' || c == '-' ||
           c == '.' || c == '~';
  });
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

// The N-th '/'-separated segment of `path`; empty past the last.
std::string_view segment(std::string_view path, std::size_t n) {
  for (; n > 0; --n) {
    const auto slash = path.find('/');
    if (slash == std::string_view::npos) return {};
    path.remove_prefix(slash + 1);
  }
  return path.substr(0, path.find('/'));
}

// The end of the JSON string whose opening quote is at `open` (the index of its closing quote). The text
// is valid JSON, so the string is closed.
std::size_t string_end(std::string_view text, std::size_t open) {
  std::size_t i = open + 1;
  while (text[i] != '"') i += text[i] == '\\' ? 2 : 1;
  return i;
}

bool is_key(std::string_view text, std::size_t close) {
  const auto next = text.find_first_not_of(" \t\r\n", close + 1);
  return next != std::string_view::npos && text[next] == ':';
}

}  // namespace

bool is_json_number(std::string_view text) {
  std::size_t i = 0;
  const auto digits = [&] {
    const auto start = i;
    while (i < text.size() && is_digit(text[i])) ++i;
    return i > start;
  };
  if (i < text.size() && text[i] == '-') ++i;
  if (i < text.size() && text[i] == '0') {
    ++i;
  } else if (!digits()) {
    return false;
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == text.size();
}

bool body_template::read_placeholder(std::string_view name, part& p, std::string& error) {
  p.number = name.starts_with('#');
  if (p.number) name.remove_prefix(1);
  std::string_view arg;
  if (name == "path") {
    p.from = source::path;
    return true;
  }
  if (name.starts_with("seg.")) {
    p.from = source::segment;
    arg = name.substr(4);
    const auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), p.index);
    if (ec == std::errc{} && end == arg.data() + arg.size() && p.index <= max_segment) return true;
  } else if (name.starts_with("query.")) {
    p.from = source::query;
    arg = name.substr(6);
    p.key = std::string(arg);
    if (is_name(arg)) return true;
  } else if (name.starts_with("header.")) {
    p.from = source::header;
    arg = name.substr(7);
    if (is_name(arg)) {
      auto field = lower(arg);
      const auto known = std::find(header_names_.begin(), header_names_.end(), field);
      p.index = static_cast<std::size_t>(known - header_names_.begin());
      if (known == header_names_.end()) header_names_.push_back(std::move(field));
      return true;
    }
  } else {
    return false;
  }
  error = "has a bad placeholder '{";
  error += p.number ? "#" : "";
  error += name;
  error += "}'";
  return false;
}

std::optional<body_template> body_template::parse(std::string json, std::string& error) {
  if (!nlohmann::json::accept(json)) {
    error = "is not JSON";
    return std::nullopt;
  }
  body_template t;
  t.text_ = std::move(json);
  const std::string_view text = t.text_;
  error.clear();
  for (auto open = text.find('"'); open != std::string_view::npos; open = text.find('"', open + 1)) {
    const auto close = string_end(text, open);
    if (is_key(text, close)) {
      open = close;
      continue;
    }
    // Placeholders hold no escapes, so the raw text of the string shows them as written.
    for (auto brace = text.find('{', open); brace < close; brace = text.find('{', brace + 1)) {
      const auto end = text.find('}', brace);
      if (end >= close) break;
      part p;
      if (!t.read_placeholder(text.substr(brace + 1, end - brace - 1), p, error)) {
        if (!error.empty()) return std::nullopt;
        continue;
      }
      if (p.number && (brace != open + 1 || end + 1 != close)) {
        error = "has '" + std::string(text.substr(brace, end + 1 - brace)) +
                "' in a longer string (a '#' "
                "placeholder must be the whole string)";
        return std::nullopt;
      }
      // A '#' placeholder replaces the whole string, its quotes too.
      p.literal_end = p.number ? open : brace;
      p.resume = p.number ? close + 1 : end + 1;
      t.parts_.push_back(std::move(p));
      brace = end;
    }
    open = close;
  }
  return t;
}

void body_template::expand(std::string& out, const template_request& req) const {
  std::size_t at = 0;
  std::string decoded;
  for (const auto& p : parts_) {
    out.append(text_, at, p.literal_end - at);
    at = p.resume;
    std::string_view value;
    switch (p.from) {
      case source::path:
        value = req.path;
        break;
      case source::segment:
        value = segment(req.path, p.index);
        break;
      case source::query: {
        auto q = find_query_param(req.query, p.key);
        decoded = q.malformed ? std::string(q.raw) : std::move(q.value);  // a bad escape stays as written
        value = decoded;
        break;
      }
      case source::header:
        if (p.index < req.headers.size()) value = req.headers[p.index];
        break;
    }
    if (!p.number) {
      append_json_escaped(out, value);
    } else if (is_json_number(value)) {
      out += value;
    } else {
      append_json_string(out, value);
    }
  }
  out.append(text_, at);
}

}  // namespace mock
