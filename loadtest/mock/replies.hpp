#pragma once
// The bytes the mock sends, and the decoding of request queries. Pure functions, no I/O.

#include <cstddef>
#include <string>
#include <string_view>

namespace mock {

// Appends an HTTP/1.1 response head (status line, Content-Type, Content-Length, Connection, blank line;
// Content-Encoding when `content_encoding` is not empty; `extra`: more fields, "Name: value\r\n" each).
// A Cache-Control value every head carries from now on (empty: none); set once at start.
void set_cache_control(std::string value);
void append_head(std::string& out, unsigned status, std::size_t content_length, bool keep_alive,
                 std::string_view content_type = "application/json", std::string_view content_encoding = {},
                 std::string_view extra = {});

// {"source":"NAME","sku":"SKU","priceCent":N,"stock":M} with h = FNV-1a-64(sku),
// N = 100 + h % 99900 and M = h % 1000. `name` must be a valid path name (it is not escaped). When
// `query` has parameters other than sku, they follow as strings in "query":{KEY:VALUE,...} (see
// append_query_object).
void append_ok_body(std::string& out, std::string_view name, std::string_view sku,
                    std::string_view query = {});

// The body of mode items: {"source":"NAME","count":N,"items":[{"id":"NAME-0","n":0},...]} with N from the
// query parameter `count` (default 3, 0 to max_items). Returns false, having appended {"error":"..."}
// instead, when `count` is not such a number. `name` must be a valid path name (it is not escaped).
inline constexpr std::size_t default_items = 3;
inline constexpr std::size_t max_items = 10000;
bool append_items_body(std::string& out, std::string_view name, std::string_view query);

// Appends `text` as a quoted JSON string; invalid UTF-8 becomes U+FFFD.
void append_json_string(std::string& out, std::string_view text);
// The same without the quotes: `text` as it goes inside a JSON string.
void append_json_escaped(std::string& out, std::string_view text);

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
  std::string_view raw;  // as written in the query
};
query_value find_query_param(std::string_view query, std::string_view key);

// Calls f(name, value) with the raw (still percent-encoded) name and value of every non-empty parameter
// of `query`, in order, until f returns true.
template <class F>
void for_each_query_param(std::string_view query, F f) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    if (f(pair.substr(0, eq), eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1)))
      return;
  }
}

// Whether `query` has a parameter whose name is not `key` (empty parameters, as in "a=1&&b=2", aside).
bool has_other_params(std::string_view query, std::string_view key);

// Appends the parameters of `query` other than `key` as a JSON object of strings, keys sorted, the first of
// repeated keys kept. Names and values are percent-decoded ('+' stays a '+'); a bad escape is kept as
// written.
void append_query_object(std::string& out, std::string_view query, std::string_view key);

}  // namespace mock
