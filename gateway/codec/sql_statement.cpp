#include "gateway/codec/sql_statement.hpp"

#include <algorithm>

namespace gateway {
namespace {

bool name_start(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}
bool name_char(char c) {
  return name_start(c) || (c >= '0' && c <= '9');
}
bool digit(char c) {
  return c >= '0' && c <= '9';
}

// Index just past the quoted run that starts at `i` with `quote`; a doubled quote escapes it.
// `backslash` honours E'...' escapes. npos when unterminated.
std::size_t skip_quoted(std::string_view q, std::size_t i, char quote, bool backslash) {
  for (++i; i < q.size(); ++i) {
    if (backslash && q[i] == '\\') {
      ++i;
    } else if (q[i] == quote) {
      if (i + 1 < q.size() && q[i + 1] == quote) {
        ++i;
      } else {
        return i + 1;
      }
    }
  }
  return std::string_view::npos;
}

// A PostgreSQL dollar-quote opener at `i` ("$$" or "$tag$"): its length, or 0.
std::size_t dollar_tag(std::string_view q, std::size_t i) {
  std::size_t j = i + 1;
  if (j < q.size() && name_start(q[j])) {
    while (j < q.size() && name_char(q[j])) ++j;
  }
  return j < q.size() && q[j] == '$' ? j + 1 - i : 0;
}

}  // namespace

std::optional<sql_statement> parse_sql_statement(std::string_view q, placeholder_style style,
                                                 std::string& problem) {
  sql_statement out;
  out.text.reserve(q.size() + 8);
  std::size_t i = 0;
  auto copy_to = [&](std::size_t end) {
    out.text.append(q.substr(i, end - i));
    i = end;
  };
  while (i < q.size()) {
    const char c = q[i];
    const char next = i + 1 < q.size() ? q[i + 1] : '\0';
    if (c == '\'' || c == '"') {
      const bool escapes =
          c == '\'' && i > 0 && (q[i - 1] == 'E' || q[i - 1] == 'e') && (i < 2 || !name_char(q[i - 2]));
      const auto end = skip_quoted(q, i, c, escapes);
      if (end == std::string_view::npos) {
        problem = c == '\'' ? "unterminated string literal" : "unterminated quoted identifier";
        return std::nullopt;
      }
      copy_to(end);
    } else if (c == '-' && next == '-') {
      const auto end = q.find('\n', i);
      copy_to(end == std::string_view::npos ? q.size() : end);
    } else if (c == '/' && next == '*') {
      const auto end = q.find("*/", i + 2);
      if (end == std::string_view::npos) {
        problem = "unterminated comment";
        return std::nullopt;
      }
      copy_to(end + 2);
    } else if (c == '$' && style == placeholder_style::dollar && !digit(next) &&
               (i == 0 || !name_char(q[i - 1])) && dollar_tag(q, i) > 0) {
      const auto len = dollar_tag(q, i);
      const auto end = q.find(q.substr(i, len), i + len);
      if (end == std::string_view::npos) {
        problem = "unterminated dollar-quoted string";
        return std::nullopt;
      }
      copy_to(end + len);
    } else if (c == ':' && next == ':') {
      copy_to(i + 2);
    } else if (c == ':' && name_start(next)) {
      std::size_t end = i + 1;
      while (end < q.size() && name_char(q[end])) ++end;
      const std::string name(q.substr(i + 1, end - i - 1));
      auto it = std::find(out.names.begin(), out.names.end(), name);
      const auto position = static_cast<std::size_t>(it - out.names.begin()) + 1;
      if (it == out.names.end()) out.names.push_back(name);
      out.text += style == placeholder_style::dollar ? '$' : '?';
      out.text += std::to_string(position);
      i = end;
    } else if ((c == '$' && digit(next)) || (c == '?' && style == placeholder_style::question) ||
               ((c == '@' || c == '$') && style == placeholder_style::question && name_start(next))) {
      problem = "write parameters as :name, not positionally";
      return std::nullopt;
    } else {
      out.text += c;
      ++i;
    }
  }
  return out;
}

}  // namespace gateway
