#pragma once
// The bytes the mock sends, and the decoding of request queries. Pure functions, no I/O.

#include <cstddef>
#include <string>
#include <string_view>

namespace mock {

// Appends an HTTP/1.1 response head (status line, Content-Type, Content-Length, Connection, blank line).
void append_head(std::string& out, unsigned status, std::size_t content_length, bool keep_alive,
                 std::string_view content_type = "application/json");

// {"source":"NAME","sku":"SKU","priceCent":N,"stock":M} with h = FNV-1a-64(sku),
// N = 100 + h % 99900 and M = h % 1000. `name` must be a valid path name (it is not escaped).
void append_ok_body(std::string& out, std::string_view name, std::string_view sku);

// Appends `text` as a quoted JSON string; invalid UTF-8 becomes U+FFFD.
void append_json_string(std::string& out, std::string_view text);

// A JSON object {"pad":"xxx..."} of exactly `size` bytes (at least 10).
std::string padded_object(std::size_t size);

// The 2 MiB body of mode `big`, built once.
const std::string& big_body();

inline constexpr std::string_view fail_body = R"({"error":"injected failure"})";
inline constexpr std::string_view garbage_body = "this is not json{{";
inline constexpr std::string_view notobject_body = "[1,2,3]";
inline constexpr std::size_t drip_body_size = 64;

// One parameter of a query string ("a=1&b=2"), percent-decoded ('+' stays a '+').
struct query_value {
  bool present = false;
  bool malformed = false;  // a bad percent escape
  std::string value;
};
query_value find_query_param(std::string_view query, std::string_view key);

}  // namespace mock
