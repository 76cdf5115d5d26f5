#include "gateway/server/router.hpp"

#include "gateway/config/param_pattern.hpp"

#include <boost/container/small_vector.hpp>

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

std::string forwarded_target(const route_pattern& pattern, const proxy_route& proxy,
                             const downstream_settings& to, std::string_view target) {
  const auto path = target_path(target);
  const auto query_at = target.find('?');
  std::string out = to.base_path;
  if (!proxy.rewrite) {
    out += path;
  } else {
    const auto& rewrite = *proxy.rewrite;
    std::string_view rest;
    if (pattern.type() == route_pattern::kind::prefix && path.size() >= pattern.text().size())
      rest = path.substr(pattern.text().size());
    out += rewrite;
    if (!rest.empty() && rest.front() == '/' && !rewrite.empty() && rewrite.back() == '/')
      rest.remove_prefix(1);
    if (!rest.empty() && rest.front() != '/' && (rewrite.empty() || rewrite.back() != '/')) out += '/';
    out += rest;
  }
  if (query_at != std::string_view::npos) out += target.substr(query_at);
  return out;
}

std::string_view target_query(std::string_view target) {
  const auto q = target.find('?');
  return q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
}

router::router(const std::vector<route_settings>& routes) : routes_(routes) {
  for (std::size_t i = 0; i < routes_.size(); ++i) order_.push_back(i);
  std::stable_sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = routes_[a].pattern;
    const auto& y = routes_[b].pattern;
    if (x.type() != y.type()) return x.type() < y.type();
    return x.type() != route_pattern::kind::exact && route_pattern::before(x, y);
  });
}

route_lookup router::find(std::string_view method, std::string_view target) const {
  route_lookup result;
  const auto path = target_path(target);
  route_pattern::captures captures;
  for (const auto i : order_) {
    const auto& route = routes_[i];
    if (!route.pattern.match(path, captures)) continue;
    // HEAD is GET without the content (RFC 9110 9.3.2): a GET route answers it too.
    if (route.method == method || route.method == "*" || (method == "HEAD" && route.method == "GET")) {
      result.status = 200;
      result.index = i;
      result.captures = std::move(captures);
      return result;
    }
    if (result.status != 405) result.index = i;
    if (result.allow.find(route.method) != std::string::npos) continue;
    result.status = 405;
    if (!result.allow.empty()) result.allow += ", ";
    result.allow += route.method;
    if (route.method == "GET") result.allow += ", HEAD";
  }
  return result;
}

namespace {

// A catch-all's value: each segment decoded, joined by '/'; false on a malformed escape, an encoded '/'
// (it would become a separator) or a "." or ".." segment (a downstream might resolve it).
bool decode_segments(std::string_view raw, std::string& out) {
  out.clear();
  std::string segment;
  for (;;) {
    const auto slash = raw.find('/');
    if (!percent_decode(raw.substr(0, slash), segment, false)) return false;
    if (segment == "." || segment == ".." || segment.find('/') != std::string::npos) return false;
    out += segment;
    if (slash == std::string_view::npos) return true;
    out += '/';
    raw.remove_prefix(slash + 1);
  }
}

}  // namespace

std::string extract_params(const route_pattern& pattern, const std::vector<param_settings>& params,
                           std::string_view query, const route_pattern::captures& captures,
                           param_values& values) {
  values.assign(params.size(), std::string());
  boost::container::small_vector<bool, 16> seen(params.size(), false);  // most routes: no allocation
  if (!captures.empty()) {
    const auto& names = pattern.names();
    for (std::size_t c = 0; c < captures.size() && c < names.size(); ++c) {
      const bool catch_all = pattern.has_catch_all() && c + 1 == names.size();
      for (std::size_t i = 0; i < params.size(); ++i) {
        if (params[i].name != names[c]) continue;
        seen[i] = true;
        const bool decoded = catch_all ? decode_segments(captures[c], values[i])
                                       : percent_decode(captures[c], values[i], false);
        if (!decoded) return "invalid path segment for parameter '" + names[c] + "'";
      }
    }
  }
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
    for (std::size_t i = 0; i < params.size(); ++i) {
      // The first occurrence wins; a path parameter is never taken from the query.
      if (params[i].name != name || seen[i] || params[i].in_path || params[i].from_identity) continue;
      seen[i] = true;
      values[i] = value;
    }
  }
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    if (p.from_identity) continue;  // filled from the verified token (server/edge_gate.hpp)
    if (!seen[i] || values[i].empty()) {
      if (p.required) return "missing required parameter '" + p.name + "'";
      continue;
    }
    // "." and ".." form a dot segment in a downstream path whatever their encoding ("%2E%2E" included,
    // which URL parsers resolve): never a value.
    if (values[i] == "." || values[i] == "..") return "invalid value for parameter '" + p.name + "'";
    if (p.matcher && !p.matcher->matches(values[i])) return "invalid value for parameter '" + p.name + "'";
  }
  return {};
}

}  // namespace gateway
