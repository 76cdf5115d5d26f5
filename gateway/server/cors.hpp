#pragma once
// Cross-origin resource sharing for routes with a `cors` section (Fetch standard, "CORS protocol"): the
// fields an answer to a cross-origin request carries, and the answer to a preflight (OPTIONS with
// Access-Control-Request-Method), which the gateway gives itself without calling any downstream. Pure.

#include "gateway/config/config.hpp"

#include <string>
#include <string_view>

namespace gateway {

// Header lines ("Name: value\r\n" each) for an answer of a route with `cors` to a request from `origin`;
// empty when the request has no Origin or the origin is not allowed (the browser then hides the answer).
std::string cors_answer_fields(const cors_settings& cors, std::string_view origin);

struct preflight_answer {
  unsigned status = 204;  // 204 allowed; 403 refused
  std::string fields;     // header lines, as above
  std::string error;      // why it was refused
};

// The answer to a preflight for `method` with `request_headers` (Access-Control-Request-Headers, a
// comma-separated list) from `origin`; `route_method` is the route's own method.
preflight_answer cors_preflight(const cors_settings& cors, std::string_view route_method,
                                std::string_view origin, std::string_view method,
                                std::string_view request_headers);

}  // namespace gateway
