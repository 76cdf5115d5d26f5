#include "gateway/codec/credentials.hpp"

#include "gateway/codec/http_text.hpp"

namespace gateway {

namespace {

bool token68_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~' || c == '+' || c == '/';
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view bearer_token(std::string_view authorization) {
  constexpr std::string_view scheme = "bearer";
  if (authorization.size() <= scheme.size() + 1 || !iequals(authorization.substr(0, scheme.size()), scheme) ||
      authorization[scheme.size()] != ' ')
    return {};
  auto token = authorization.substr(scheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  std::size_t i = 0;
  while (i < token.size() && token68_char(token[i])) ++i;
  if (i == 0) return {};
  while (i < token.size() && token[i] == '=') ++i;
  return i == token.size() ? token : std::string_view();
}

std::string_view cookie_value(std::string_view cookies, std::string_view name) {
  if (name.empty()) return {};
  while (!cookies.empty()) {
    const auto end = cookies.find(';');
    const auto pair = trimmed(cookies.substr(0, end));
    cookies = end == std::string_view::npos ? std::string_view() : cookies.substr(end + 1);
    const auto eq = pair.find('=');
    if (eq == std::string_view::npos || trimmed(pair.substr(0, eq)) != name) continue;
    auto value = trimmed(pair.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
      value = value.substr(1, value.size() - 2);
    return value;
  }
  return {};
}

}  // namespace gateway
