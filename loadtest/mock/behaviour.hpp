#pragma once
// How the mock answers requests to one path: a mode (what it sends) and a delay (when it sends it).

#include <chrono>
#include <optional>
#include <string_view>

namespace mock {

using std::chrono::microseconds;

enum class mode {
  ok,           // 200 with a JSON object derived from the sku
  hang,         // never answers
  fail,         // 500 with a JSON error
  reset,        // closes the connection with an RST
  garbage,      // 200 with a body that is not JSON
  notobject,    // 200 with a JSON array
  big,          // 200 with a 2 MiB JSON object
  drip,         // 200 head at once, then the body one byte per second
  slowheaders,  // status line at once, then the rest of the head one byte per second
  chunked,      // 200 like ok, in chunked transfer encoding, with the header fields of a real service
  interim,      // 103 Early Hints at once, then (after the delay) 200 like ok
  gzipchunked,  // 200 like chunked, but labelled "Transfer-Encoding: gzip, chunked" (the body is not gzip)
  unavailable,  // 503 with a JSON error
  flaky,        // the path's 1st, 3rd, 5th ... request like unavailable, the others like ok
  compressed,   // 200 like ok, in gzip or deflate as the request's Accept-Encoding allows (else plain)
  zipbomb,      // 200 with Content-Encoding: gzip, about 16 KiB that inflate to a 16 MiB JSON object
  badgzip,      // 200 with Content-Encoding: gzip, the ok body gzipped with its checksum broken
  brotli,       // 200 like ok, labelled Content-Encoding: br (a coding the gateway does not decode)
  items,        // 200 with an array of ?count= items (default 3) in a JSON object (append_items_body)
};

struct behaviour {
  mode how = mode::ok;
  microseconds delay{0};
};

// Parses a mode by its name ("ok", "hang", ...); nullopt for anything else.
std::optional<mode> parse_mode(std::string_view text);

// The names of all modes separated by '|', for usage texts.
std::string_view mode_names();

// A path name is 1 to 128 characters from [A-Za-z0-9_-./%] (one or more segments, as sent).
bool is_valid_path_name(std::string_view name);

// The name a setting is given under: a path name, or a prefix "NAME/*" whose settings apply to every path
// under "NAME/" that has none of its own (the longest such prefix wins).
bool is_valid_setting_name(std::string_view name);

// The paths a prefix setting covers start with this, e.g. "seller/" for "seller/*"; empty for a path name.
std::string_view setting_prefix(std::string_view name);

}  // namespace mock
