#pragma once
// Where a request carries its credential: the token of `Authorization: Bearer <token>` (RFC 6750 2.1) and a
// cookie's value in a Cookie field (RFC 6265 4.2.1). Pure functions on untrusted text; they never throw.
// Whatever does not fit the grammar gives an empty result: the request then has no credential (401), so a
// malformed field can never pass as another credential.

#include <string_view>

namespace gateway {

// "Bearer" (any case), one or more spaces, a b64token (1*( ALPHA / DIGIT / "-" . _ ~ + / ) *"="), and
// nothing else: the token, or empty.
std::string_view bearer_token(std::string_view authorization);

// The value of the first cookie named `name` in `cookies` ("a=1; b=2", several Cookie fields joined with
// "; "), its double quotes removed; empty when there is none or `name` is empty. Pairs are split at ';',
// spaces around a pair are ignored, a pair without '=' is skipped.
std::string_view cookie_value(std::string_view cookies, std::string_view name);

}  // namespace gateway
