#pragma once
// One public key a token's signature is verified with, imported through OpenSSL 3's provider API from its
// JWK parameters (already base64url-decoded), and the verification itself (OpenSSL's EVP one-shot calls).
// Immutable once imported; copies share the key, and any number of threads may verify with it at once.
// Never throws; on any OpenSSL failure the thread's OpenSSL error queue is cleared before returning, so
// nothing is left for the TLS code running on the same thread to misread.

#include "gateway/auth/jwt_algorithm.hpp"

#include <openssl/types.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace gateway {

// What a key is: the kty and, for EC and OKP keys, the crv it was imported with.
enum class key_kind : unsigned char { rsa, ec_p256, ec_p384, ed25519 };

// Whether a key of `kind` can verify `algorithm`: RSA for RS* and PS256, P-256 for ES256, P-384 for ES384,
// Ed25519 for EdDSA.
bool fits(key_kind kind, jwt_algorithm algorithm);

class public_key {
 public:
  // Bounds of an RSA modulus: smaller ones are breakable, larger ones make each verification costly.
  static constexpr int min_rsa_bits = 2048, max_rsa_bits = 8192;

  // An RSA key from its modulus and public exponent (big-endian bytes). nullopt with `error` set for a
  // modulus outside [min_rsa_bits, max_rsa_bits] or even, an exponent that is even, 1, or over 64 bits.
  static std::optional<public_key> rsa(std::string_view n, std::string_view e, std::string& error);
  // An EC key (kind ec_p256 or ec_p384) from its affine coordinates, each exactly the curve's size (32 or
  // 48 bytes). nullopt with `error` set for other sizes or a point that is not on the curve.
  static std::optional<public_key> ec(key_kind kind, std::string_view x, std::string_view y,
                                      std::string& error);
  // An Ed25519 key from its 32-byte encoding (RFC 8037 "x"). nullopt with `error` set for another size.
  static std::optional<public_key> ed25519(std::string_view x, std::string& error);

  key_kind kind() const { return kind_; }

  // Whether `signature` is `algorithm`'s signature of `signing_input` by this key: PKCS#1 v1.5 for RS*,
  // PSS with MGF1 and a salt as long as the digest for PS256, raw r||s (64 or 96 bytes) for ES*, Ed25519
  // for EdDSA. False for an algorithm the key does not fit.
  bool verify(jwt_algorithm algorithm, std::string_view signing_input, std::string_view signature) const;

 private:
  public_key(key_kind kind, std::shared_ptr<EVP_PKEY> key) : kind_(kind), key_(std::move(key)) {}

  key_kind kind_;
  std::shared_ptr<EVP_PKEY> key_;  // never null; shared by the copies, freed with the last one
};

}  // namespace gateway
