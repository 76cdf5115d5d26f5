#pragma once
// A JSON Web Key Set (RFC 7517): the public keys tokens are verified with, parsed from the JWKS document an
// identity provider publishes. Immutable once built and shared between threads (shared_ptr<const>); a new
// document makes a new set, with a new generation. Parsing never throws.

#include "gateway/auth/jwt_algorithm.hpp"
#include "gateway/auth/public_key.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gateway {

// One usable key of a set.
struct jwk {
  std::string kid;                   // empty when the JWK has none
  std::optional<jwt_algorithm> alg;  // the JWK's own "alg", when it names one
  public_key key;
};

class jwk_set {
 public:
  // Parses a JWKS document {"keys":[...]}. Keys it cannot use are skipped, each with a line in `skipped`
  // when given: kty "oct" (a shared secret: HMAC is never accepted), an unknown kty or crv (EC P-256 and
  // P-384, OKP Ed25519 are known), a "use" other than "sig", "key_ops" without "verify", an "alg" that is
  // no asymmetric JWS algorithm or does not fit the key, a "kid" that is no string, parameters that fail
  // to import (bad base64url, a point off the curve, an RSA modulus under 2048 bits: see public_key).
  // Null with `error` set when the text is not JSON, has no "keys" array, or no key is usable.
  static std::shared_ptr<const jwk_set> parse(std::string_view json, std::string& error,
                                              std::vector<std::string>* skipped = nullptr);

  std::size_t size() const { return keys_.size(); }
  // The kids of the keys, in the document's order ("" for a key without one); for logs and tests.
  std::vector<std::string> kids() const;
  // A number no other set parsed by this process has: what a cache of verified tokens is keyed by (a
  // pointer could be reused by the next set after this one is freed).
  std::uint64_t generation() const { return generation_; }

  // The key a token names. With a kid: the first key of that kid which fits `algorithm` (its kind, and its
  // own alg when it has one), else the first key of that kid (for the caller to refuse), null when no key
  // has it. Without a kid: the one key that fits `algorithm`, null when none or several do.
  const jwk* find(std::optional<std::string_view> kid, jwt_algorithm algorithm) const;

 private:
  jwk_set(std::vector<jwk> keys, std::uint64_t generation)
      : keys_(std::move(keys)), generation_(generation) {}

  std::vector<jwk> keys_;
  std::uint64_t generation_;
};

// Whether `key` may verify `algorithm`: its kind fits and its own alg, when it has one, is that algorithm.
bool usable_for(const jwk& key, jwt_algorithm algorithm);

}  // namespace gateway
