#pragma once
// base64url (RFC 4648 section 5) as JSON Web Tokens and Keys write it: the URL-safe alphabet, no padding
// (RFC 7515 section 2). Pure functions.

#include <cstddef>
#include <string>
#include <string_view>

namespace gateway {

// Decodes `text` into `out` (replacing what it held). False, with `out` unspecified, for anything but the
// canonical unpadded form: a '=' or any byte outside A-Z a-z 0-9 '-' '_', a length of 4k+1, or unused low
// bits of the last character that are not zero (so that each byte string has exactly one encoding).
bool base64url_decode(std::string_view text, std::string& out);

// Appends the unpadded base64url form of `size` bytes at `data`.
void base64url_append(std::string& out, const void* data, std::size_t size);

}  // namespace gateway
