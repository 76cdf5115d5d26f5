#include "gateway/codec/body_template.hpp"
#include "gateway/codec/safe_name.hpp"

#include "gateway/codec/json_text.hpp"

#include <utility>

namespace gateway {

std::optional<body_template> body_template::parse(std::string_view json, std::string& error) {
  body_template t;
  t.text_ = std::string(json);
  std::string literal;
  bool in_string = false;
  std::string param_in_string;  // the first parameter of the string being read, if any
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string && c == '\\') {  // an escape: its next character is taken as it is
      literal += c;
      if (i + 1 < json.size()) literal += json[++i];
      continue;
    }
    if (c == '"') {
      // In the compact text a member name, and only a member name, is followed by ':'. A parameter there
      // would let a client name a member of its choosing, a second one of a fixed member's name among
      // them (which of the two a downstream takes is its own choice).
      if (in_string && !param_in_string.empty() && i + 1 < json.size() && json[i + 1] == ':') {
        error = "'{" + param_in_string +
                "}' in a member name: a client could add or override a member with it; parameters go in "
                "values only";
        return std::nullopt;
      }
      in_string = !in_string;
      param_in_string.clear();
    }
    if (!in_string || c != '{') {
      literal += c;
      continue;
    }
    const auto close = json.find('}', i + 1);
    const auto quote = json.find('"', i + 1);
    if (close == std::string_view::npos || (quote != std::string_view::npos && quote < close)) {
      literal += c;  // a lone '{' in a string is text
      continue;
    }
    const std::string name(json.substr(i + 1, close - i - 1));
    if (!valid_name(name)) {
      error = "'{" + name + "}' in the body is not a parameter: a name " + name_rule;
      return std::nullopt;
    }
    if (!literal.empty()) t.pieces_.push_back({false, std::exchange(literal, {})});
    if (param_in_string.empty()) param_in_string = name;
    t.pieces_.push_back({true, name});
    i = close;
  }
  if (!literal.empty()) t.pieces_.push_back({false, std::move(literal)});
  return t;
}

std::vector<std::string> body_template::param_names() const {
  std::vector<std::string> names;
  for (const auto& p : pieces_) {
    if (p.is_param) names.push_back(p.text);
  }
  return names;
}

void body_template::append_escaped(std::string& out, std::string_view value) {
  std::string quoted;
  append_json_string(quoted, value);  // "..." with everything JSON needs escaped
  out.append(quoted, 1, quoted.size() - 2);
}

}  // namespace gateway
