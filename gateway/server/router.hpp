#pragma once
// Finds the route for a request and extracts and validates its query parameters. Pure functions.

#include "gateway/config/config.hpp"
#include "gateway/core/http_text.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace gateway {

struct route_lookup {
  unsigned status = 404;  // 200 found, 404 no such path, 405 path exists for other methods
  std::size_t index = 0;  // into gateway_config::routes when status == 200
  std::string allow;      // methods allowed on the path, for 405
};

class router {
 public:
  explicit router(const std::vector<route_settings>& routes) : routes_(routes) {}
  // `target` is the request-target (path plus optional query). A GET route also takes HEAD.
  route_lookup find(std::string_view method, std::string_view target) const;

 private:
  const std::vector<route_settings>& routes_;
};

// Splits "path?query".
std::string_view target_path(std::string_view target);
std::string_view target_query(std::string_view target);

// Fills `values` (aligned with route.params) from the query. Returns an error message for the client
// (missing required parameter, pattern mismatch, malformed encoding), or "" when all is well.
std::string extract_params(const route_settings& route, std::string_view query,
                           std::vector<std::string>& values);

}  // namespace gateway
