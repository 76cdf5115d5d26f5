#pragma once
// The head of every response the gateway writes, on the public port (answers, and the 503 written at the
// door to a connection beyond the limits) and on the admin port: status line, headers, blank line. Pure.

#include <cstddef>
#include <string>
#include <string_view>

namespace gateway {

// The headers a response can carry, written in this order; an empty value or a false flag leaves its
// header out.
struct response_head {
  unsigned status = 200;
  std::string_view content_type{};
  std::string_view content_encoding{};  // gzip or deflate when the body is compressed
  std::size_t content_length = 0;       // of the body a GET would get, also when answering HEAD
  std::string_view request_id{};        // X-Request-Id
  std::string_view degraded{};          // X-Degraded
  bool vary_accept_encoding = false;    // Vary: Accept-Encoding (the body depends on it)
  bool no_store = false;                // Cache-Control: no-store
  std::string_view allow{};             // Allow (with 405)
  bool retry_after = false;             // Retry-After: 1 (with 503)
  bool keep_alive = true;               // else Connection: close
  std::string_view fields{};            // more header lines, "Name: value\r\n" each
};

// "HTTP/1.1 <status> <reason>\r\n" then the headers, each ending in CRLF, then CRLF. A 204 has no
// Content-Type and no Content-Length (RFC 9110 8.6).
std::string serialize(const response_head& head);

}  // namespace gateway
