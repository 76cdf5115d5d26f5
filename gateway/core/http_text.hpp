#pragma once
// Small pieces of HTTP text handling shared by the gateway and the mock downstream. Pure functions.

#include <string>
#include <string_view>

namespace gateway {

// The reason phrase of a status code ("OK", "Bad Gateway"); "Unknown" for codes not used here.
std::string_view reason_phrase(unsigned status);

// Percent-decodes `in` into `out`; '+' becomes a space when `plus_is_space` (form encoding).
// Returns false on a malformed escape ('%' not followed by two hex digits).
bool percent_decode(std::string_view in, std::string& out, bool plus_is_space);

// Appends `in` to `out` with every byte outside RFC 3986's unreserved characters percent-encoded
// (uppercase hex digits), and '.' too, so that a value never forms a "." or ".." path segment: fit for a
// path segment or a query value.
void percent_encode(std::string_view in, std::string& out);

}  // namespace gateway
