#include "gateway/server/router.hpp"

#include "gateway/config/param_pattern.hpp"

#include <algorithm>

namespace gateway {

std::string_view target_path(std::string_view target) {
  // The absolute form ("http://host/path?q", RFC 9112 3.2.2), which a server must accept: its path.
  if (!target.empty() && target.front() != '/') {
    const auto scheme_end = target.find("://");
    const auto scheme = target.substr(0, scheme_end);
    const bool valid_scheme = scheme_end != std::string_view::npos && !scheme.empty() &&
                              std::all_of(scheme.begin(), scheme.end(), [](char c) {
                                return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                       (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
                              });
    if (valid_scheme) {
      // The authority ends at the first '/', '?' or '#'; the path starts at a '/' only.
      const auto end = target.find_first_of("/?#", scheme_end + 3);
      target =
          end != std::string_view::npos && target[end] == '/' ? target.substr(end) : std::string_view("/");
    }
  }
  return target.substr(0, target.find('?'));
}

std::string_view target_query(std::string_view target) {
  const auto q = target.find('?');
  return q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
}

route_lookup router::find(std::string_view method, std::string_view target) const {
  route_lookup result;
  const auto path = target_path(target);
  for (std::size_t i = 0; i < routes_.size(); ++i) {
    if (routes_[i].path != path) continue;
    // HEAD is GET without the content (RFC 9110 9.3.2): a GET route answers it too.
    if (routes_[i].method == method || (method == "HEAD" && routes_[i].method == "GET")) {
      result.status = 200;
      result.index = i;
      return result;
    }
    result.status = 405;
    if (!result.allow.empty()) result.allow += ", ";
    result.allow += routes_[i].method;
    if (routes_[i].method == "GET") result.allow += ", HEAD";
  }
  return result;
}

std::string extract_params(const route_settings& route, std::string_view query,
                           std::vector<std::string>& values) {
  values.assign(route.params.size(), std::string());
  std::vector<bool> seen(route.params.size(), false);
  std::string name;
  std::string value;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    if (!percent_decode(pair.substr(0, eq), name, true)) return "malformed percent-encoding in query";
    if (!percent_decode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), value,
                        true)) {
      return "malformed percent-encoding in query";
    }
    for (std::size_t i = 0; i < route.params.size(); ++i) {
      if (route.params[i].name != name || seen[i]) continue;  // the first occurrence wins
      seen[i] = true;
      values[i] = value;
    }
  }
  for (std::size_t i = 0; i < route.params.size(); ++i) {
    const auto& p = route.params[i];
    if (!seen[i] || values[i].empty()) {
      if (p.required) return "missing required parameter '" + p.name + "'";
      continue;
    }
    if (p.matcher && !p.matcher->matches(values[i])) return "invalid value for parameter '" + p.name + "'";
  }
  return {};
}

}  // namespace gateway
