#pragma once
// Finds the route for a request (route_pattern's precedence: exact, then templates, then prefixes; the
// first that matches both path and method) and extracts and validates its parameters from the path and
// the query. Pure functions.

#include "gateway/codec/http_text.hpp"
#include "gateway/config/config.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace gateway {

struct route_lookup {
  unsigned status = 404;  // 200 found, 404 no such path, 405 path exists for other methods
  // Into gateway_config::routes: the route found (200), or the first whose path matched (405).
  std::size_t index = 0;
  std::string allow;                 // methods allowed on the path, for 405 (and OPTIONS)
  route_pattern::captures captures;  // the path's parameters, encoded, views into the target
};

class router {
 public:
  explicit router(const std::vector<route_settings>& routes);
  // `target` is the request-target (path plus optional query). A GET route also takes HEAD.
  route_lookup find(std::string_view method, std::string_view target) const;

 private:
  const std::vector<route_settings>& routes_;
  std::vector<std::size_t> order_;  // route indexes in the order they are tried
};

// Splits "path?query".
std::string_view target_path(std::string_view target);
std::string_view target_query(std::string_view target);

// A pass-through route's downstream request-target: the downstream's base path, then the path with the
// prefix `pattern` matched replaced by the route's `rewrite` (an exact or template route: the whole
// path), then the query as sent. `target` must be canonical (core/request_target.hpp, applied to every
// request's head): a dot segment in it could otherwise climb out of the rewrite and the base path.
std::string forwarded_target(const route_pattern& pattern, const proxy_route& proxy,
                             const downstream_settings& to, std::string_view target);

// Fills `values` (aligned with `params`, an aggregate route's) from the path's `captures` (named by
// `pattern`; percent-decoded; a catch-all's segments each, joined by '/') and the query. Returns an error
// message for the client (missing required parameter, pattern mismatch, malformed encoding, a "." or ".."
// segment or an encoded '/' in a catch-all), or "" when all is well.
std::string extract_params(const route_pattern& pattern, const std::vector<param_settings>& params,
                           std::string_view query, const route_pattern::captures& captures,
                           param_values& values);

}  // namespace gateway
