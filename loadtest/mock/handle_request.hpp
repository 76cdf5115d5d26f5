#pragma once
// Routing of one request. The admin endpoints (/__stats, /__reset, /__mode) and errors are answered at
// once with a JSON reply; GET /NAME?sku=SKU is counted in the registry and becomes a downstream action
// that the session performs according to the path's behaviour. No I/O.

#include "loadtest/mock/path_registry.hpp"

#include <string>
#include <string_view>

namespace mock {

struct request_view {
  bool is_get = true;
  std::string_view target;  // origin-form, e.g. "/coupon?sku=A1"
  request_headers headers;
};

struct request_action {
  bool downstream = false;

  // A reply (downstream == false).
  unsigned status = 200;
  std::string body;
  bool close = false;  // close the connection after the reply

  // A downstream request (downstream == true). `name` points into the request target.
  std::string_view name;
  std::string sku;
  path_registry::ticket ticket;
};

request_action handle_request(const request_view& req, path_registry& registry);

}  // namespace mock
