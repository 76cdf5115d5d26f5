#pragma once
// Routing of one request. The admin endpoints (/__stats, /__reset, /__mode, /__control) and errors are
// answered at once with a JSON reply; GET /NAME?sku=SKU is counted in the registry (for the endpoint the
// request came in on) and becomes a downstream action that the session performs according to the path's
// behaviour. No I/O.

#include "loadtest/mock/path_registry.hpp"

#include <string>
#include <string_view>

namespace mock {

struct request_view {
  bool is_get = true;
  bool is_post = false;
  bool is_write = false;    // PUT, PATCH or DELETE: served like GET and POST on a path
  std::string_view target;  // origin-form, e.g. "/coupon?sku=A1"
  request_headers headers;
  std::size_t endpoint = 0;  // the listener's index
};

struct request_action {
  bool downstream = false;

  // A reply (downstream == false).
  unsigned status = 200;
  std::string body;
  bool close = false;  // close the connection after the reply

  // A downstream request (downstream == true). `name`, `query` and `whole_query` point into the request
  // target; `query` is empty when it holds nothing but the sku, `whole_query` is the query as sent.
  std::string_view name;
  std::string sku;
  std::string_view query;
  std::string_view whole_query;
  path_registry::ticket ticket;
};

request_action handle_request(const request_view& req, path_registry& registry);

}  // namespace mock
