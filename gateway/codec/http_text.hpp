#pragma once
// Small pieces of HTTP text handling shared by the gateway and the mock downstream. Pure functions.
// (Character classes: core/char_class.hpp.)

#include <string>
#include <string_view>

namespace gateway {

// `s` without optional whitespace (RFC 9110 OWS: SP and HTAB) at either end.
inline std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// ASCII case-insensitive equality (field names, tokens).
inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// Hop-by-hop fields (RFC 9110 7.6.1) and the framing: they describe one connection or one message's
// bytes, and are never passed from one connection to another.
inline constexpr std::string_view hop_by_hop_fields[] = {"connection", "keep-alive",    "proxy-connection",
                                                         "te",         "trailer",       "transfer-encoding",
                                                         "upgrade",    "content-length"};

// Whether `name` is one of `names` (lower-case), ignoring case.
template <std::size_t N>
bool listed_ci(std::string_view name, const std::string_view (&names)[N]) {
  for (const auto n : names) {
    if (iequals(name, n)) return true;
  }
  return false;
}

// The reason phrase of a status code ("OK", "Bad Gateway"), for every registered code; "Unknown" for an
// unregistered one.
std::string_view reason_phrase(unsigned status);

// Percent-decodes `in` into `out`; '+' becomes a space when `plus_is_space` (form encoding).
// Returns false on a malformed escape ('%' not followed by two hex digits).
bool percent_decode(std::string_view in, std::string& out, bool plus_is_space);

// Appends `in` to `out` with every byte outside RFC 3986's unreserved characters percent-encoded
// (uppercase hex digits), and '.' too, so that a value never forms a "." or ".." path segment: fit for a
// path segment or a query value.
void percent_encode(std::string_view in, std::string& out);

}  // namespace gateway
