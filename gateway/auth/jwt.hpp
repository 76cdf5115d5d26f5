#pragma once
// Verification of a JSON Web Token (RFC 7519) in JWS compact form (RFC 7515) against a key set and a
// route's rules: the signature with an asymmetric algorithm only, then the time window and the claims a
// route asks for. Pure and thread-safe (the key set is immutable); errors are a verdict, never an exception.

#include "gateway/auth/jwk_set.hpp"
#include "gateway/auth/jwt_algorithm.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gateway {

// Why a token was refused. `forbidden` is a 403 (a valid token lacking a required claim value); the others
// are a 401.
enum class jwt_failure : unsigned char {
  none,
  missing,
  malformed,
  algorithm,
  unknown_kid,
  bad_signature,
  expired,
  not_yet_valid,
  issuer,
  audience,
  missing_claim,
  forbidden
};
inline constexpr std::size_t jwt_failure_count = 12;  // including none

// The metric label of a failure: "missing", "malformed", "algorithm", "unknown_kid", "bad_signature",
// "expired", "not_yet_valid", "issuer", "audience", "missing_claim", "forbidden" ("none" for none).
std::string_view label(jwt_failure failure);

// A claim value a route requires: a `forbidden` verdict when absent.
struct jwt_claim_requirement {
  std::string claim;                // a top-level claim name
  std::vector<std::string> values;  // each must be present: a string claim is split on spaces (OAuth
                                    // "scope"), an array claim must include each as a string element
};

struct jwt_rules {
  std::vector<jwt_algorithm> algorithms;     // accepted; empty: every one of jwt_algorithm
  std::vector<std::string> issuers;          // "iss" must equal one; empty: not checked
  std::vector<std::string> audiences;        // "aud" (a string or an array) must hold one; empty: not checked
  std::chrono::seconds leeway{0};            // allowed clock skew on exp and nbf
  std::vector<std::string> required_claims;  // must be present (any JSON value but null)
  std::vector<jwt_claim_requirement> claim_values;
};

struct jwt_verdict {
  jwt_failure failure = jwt_failure::none;
  // For WWW-Authenticate's error_description: short fixed wording, at most a claim name from the rules;
  // never a byte of the token or a claim's value. Empty when the token is accepted.
  std::string description;
  std::int64_t expires = 0;     // exp (unix seconds, a fraction cut off), 0 when absent
  std::int64_t not_before = 0;  // nbf (unix seconds, a fraction rounded up), 0 when absent
  // The values of the `wanted` claims, in order, once the token is accepted: a string decoded, a number
  // or a boolean as its JSON text as written; empty for an absent claim, null, an object or an array.
  std::vector<std::string> claims;
};

// The largest token verified; a longer one is malformed.
inline constexpr std::size_t max_jwt_size = 8192;

// Verifies a compact JWS token (header.payload.signature, each base64url without padding) against `keys`
// and `rules` at `now` (unix seconds). Checks, in order, the first failing one giving the verdict:
//   malformed      over max_jwt_size; not three parts; a part not canonical base64url (padding, another
//                  character); a header or payload that is no JSON object, repeats a member name in any
//                  object, or nests deeper than 16; a "crit" header; "alg" or "kid" no string
//   algorithm      "alg" none, HS*, unknown, or not in rules.algorithms
//   unknown_kid    no key of that kid; without a kid, not exactly one key fits the algorithm
//   bad_signature  the key's own "alg" differs, its kind does not fit the algorithm, or the signature
//                  does not verify
//   expired        now > exp + leeway ("exp" not a number: malformed; a token without exp is accepted)
//   not_yet_valid  now + leeway < nbf ("nbf" not a number: malformed)
//   issuer, audience, missing_claim, forbidden: the rules above
// An empty token is `missing`. Never throws.
jwt_verdict verify_jwt(std::string_view token, const jwk_set& keys, const jwt_rules& rules, std::int64_t now,
                       std::span<const std::string> wanted = {});

}  // namespace gateway
