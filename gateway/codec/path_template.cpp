#include "gateway/codec/path_template.hpp"

#include <utility>

namespace gateway {

std::optional<path_template> path_template::parse(std::string_view text, std::string& error) {
  if (text.empty() || text.front() != '/') {
    error = "path must start with '/'";
    return std::nullopt;
  }
  path_template t;
  std::string literal;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      error = "path contains a space or control character";
      return std::nullopt;
    }
    if (c == '}') {
      error = "unbalanced '}' in path";
      return std::nullopt;
    }
    if (c != '{') {
      literal += c;
      continue;
    }
    const auto close = text.find('}', i + 1);
    if (close == std::string_view::npos) {
      error = "unbalanced '{' in path";
      return std::nullopt;
    }
    auto name = text.substr(i + 1, close - i - 1);
    const bool segments = !name.empty() && name.back() == '*';
    if (segments) {
      name.remove_suffix(1);
      if (text.substr(0, i).find('?') != std::string_view::npos) {
        error = "{" + std::string(name) + "*} belongs in the path, not in the query";
        return std::nullopt;
      }
    }
    if (name.empty() || name.find('{') != std::string_view::npos) {
      error = "empty or nested '{}' in path";
      return std::nullopt;
    }
    for (const char n : name) {
      if (static_cast<unsigned char>(n) <= 0x20 || n == 0x7f) {
        error = "path contains a space or control character";
        return std::nullopt;
      }
    }
    if (!literal.empty()) t.pieces_.push_back({false, false, std::exchange(literal, {})});
    t.pieces_.push_back({true, segments, std::string(name)});
    i = close;
  }
  if (!literal.empty()) t.pieces_.push_back({false, false, std::move(literal)});
  return t;
}

std::vector<std::string> path_template::param_names() const {
  std::vector<std::string> names;
  for (const auto& p : pieces_) {
    if (p.is_param) names.push_back(p.text);
  }
  return names;
}

}  // namespace gateway
