#pragma once
// Test helper for JSON Web Tokens: keys made with OpenSSL, tokens signed with them, and the JWKS text of
// their public parts. Independent of gateway/auth on purpose (its own base64url through OpenSSL's base64,
// its own conversion of ECDSA signatures), so that a test signs the way an identity provider would.
// Throws std::runtime_error when OpenSSL fails.

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace jwt_test {

using pkey = std::shared_ptr<EVP_PKEY>;

inline void require(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("OpenSSL: ") + what);
}

// Keys: "RSA" with `bits`, "EC" on `curve` ("P-256", "P-384"), "ED25519".
inline pkey make_rsa(std::size_t bits) {
  return pkey(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", bits), EVP_PKEY_free);
}
inline pkey make_ec(const char* curve) {
  return pkey(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", curve), EVP_PKEY_free);
}
inline pkey make_ed25519() {
  return pkey(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"), EVP_PKEY_free);
}

// Unpadded base64url, from OpenSSL's padded base64.
inline std::string b64url(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (auto& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return out;
}

// A big-number parameter of `key`, big-endian, left-padded with zeros to `size` bytes (0: no padding).
inline std::string bn_param(EVP_PKEY* key, const char* name, int size = 0) {
  BIGNUM* bn = nullptr;
  require(EVP_PKEY_get_bn_param(key, name, &bn) == 1, name);
  std::string out(static_cast<std::size_t>(size ? size : BN_num_bytes(bn)), '\0');
  BN_bn2binpad(bn, reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(out.size()));
  BN_free(bn);
  return out;
}

// The public JWK members of `key` (without braces): kty, crv and the key's parameters.
inline std::string jwk_members(EVP_PKEY* key) {
  if (EVP_PKEY_is_a(key, "RSA")) {
    return R"("kty":"RSA","n":")" + b64url(bn_param(key, OSSL_PKEY_PARAM_RSA_N)) + R"(","e":")" +
           b64url(bn_param(key, OSSL_PKEY_PARAM_RSA_E)) + '"';
  }
  if (EVP_PKEY_is_a(key, "EC")) {
    const int size = EVP_PKEY_get_bits(key) == 256 ? 32 : 48;
    return std::string(R"("kty":"EC","crv":")") + (size == 32 ? "P-256" : "P-384") + R"(","x":")" +
           b64url(bn_param(key, OSSL_PKEY_PARAM_EC_PUB_X, size)) + R"(","y":")" +
           b64url(bn_param(key, OSSL_PKEY_PARAM_EC_PUB_Y, size)) + '"';
  }
  std::string raw(32, '\0');
  std::size_t len = raw.size();
  require(EVP_PKEY_get_raw_public_key(key, reinterpret_cast<unsigned char*>(raw.data()), &len) == 1,
          "raw key");
  return R"("kty":"OKP","crv":"Ed25519","x":")" + b64url(raw) + '"';
}

// A JWK object of `key`'s public part with `kid`, and `extra` members (",\"alg\":\"RS256\"") appended.
inline std::string jwk(EVP_PKEY* key, std::string_view kid, std::string_view extra = "") {
  return "{" + jwk_members(key) + R"(,"kid":")" + std::string(kid) + '"' + std::string(extra) + "}";
}

// The subjectPublicKeyInfo PEM of `key` (the bytes a confused verifier might use as an HMAC secret).
inline std::string public_pem(EVP_PKEY* key) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  require(bio && PEM_write_bio_PUBKEY(bio.get(), key) == 1, "PEM");
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

// A DER ECDSA-Sig-Value as JWS writes it: r||s, each `half` bytes (RFC 7518 3.4).
inline std::string ecdsa_raw(std::string_view der, int half) {
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  std::unique_ptr<ECDSA_SIG, decltype(&ECDSA_SIG_free)> es(
      d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der.size())), ECDSA_SIG_free);
  require(es != nullptr, "DER");
  std::string raw(static_cast<std::size_t>(2 * half), '\0');
  auto* out = reinterpret_cast<unsigned char*>(raw.data());
  BN_bn2binpad(ECDSA_SIG_get0_r(es.get()), out, half);
  BN_bn2binpad(ECDSA_SIG_get0_s(es.get()), out + half, half);
  return raw;
}

// The JWS signature of `input` by `key` with `alg` ("RS256" .. "EdDSA"), raw r||s for ES*.
inline std::string sign(EVP_PKEY* key, std::string_view alg, std::string_view input) {
  const char* md = alg.ends_with("256")   ? "SHA256"
                   : alg.ends_with("384") ? "SHA384"
                   : alg.ends_with("512") ? "SHA512"
                                          : nullptr;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_PKEY_CTX* pctx = nullptr;
  require(EVP_DigestSignInit_ex(ctx.get(), &pctx, md, nullptr, nullptr, key, nullptr) == 1, "sign init");
  if (alg.starts_with("PS")) {
    require(EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
                EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1,
            "PSS");
  }
  const auto* in = reinterpret_cast<const unsigned char*>(input.data());
  std::size_t len = 0;
  require(EVP_DigestSign(ctx.get(), nullptr, &len, in, input.size()) == 1, "sign size");
  std::string sig(len, '\0');
  require(
      EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len, in, input.size()) == 1,
      "sign");
  sig.resize(len);
  return alg.starts_with("ES") ? ecdsa_raw(sig, alg == "ES256" ? 32 : 48) : sig;
}

// HMAC-SHA256 of `input` under `secret`: what an HS256 token carries.
inline std::string hmac_sha256(std::string_view secret, std::string_view input) {
  unsigned char out[32];
  std::size_t len = 0;
  require(EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, secret.data(), secret.size(),
                    reinterpret_cast<const unsigned char*>(input.data()), input.size(), out, sizeof out,
                    &len) != nullptr,
          "HMAC");
  return std::string(reinterpret_cast<char*>(out), len);
}

// header.payload of a token, each part the base64url of the JSON text given.
inline std::string signing_input(std::string_view header_json, std::string_view payload_json) {
  return b64url(header_json) + "." + b64url(payload_json);
}

// A complete token: `header_json` and `payload_json` signed by `key` with `alg`.
inline std::string token(EVP_PKEY* key, std::string_view alg, std::string_view header_json,
                         std::string_view payload_json) {
  const auto input = signing_input(header_json, payload_json);
  return input + "." + b64url(sign(key, alg, input));
}

// The keys the tests share, made once per process (an RSA key takes a moment): one of each kind, and a
// second P-256 key for the sets that hold two keys of a kind.
struct key_ring {
  pkey rsa = make_rsa(2048);
  pkey ec256 = make_ec("P-256");
  pkey ec256_other = make_ec("P-256");
  pkey ec384 = make_ec("P-384");
  pkey ed = make_ed25519();

  // A JWKS of one key of each kind: kids "rsa-1", "ec256-1", "ec384-1", "ed-1", no "alg" members.
  std::string jwks() const {
    return R"({"keys":[)" + jwk(rsa.get(), "rsa-1") + "," + jwk(ec256.get(), "ec256-1") + "," +
           jwk(ec384.get(), "ec384-1") + "," + jwk(ed.get(), "ed-1") + "]}";
  }
};

inline const key_ring& keys() {
  static const key_ring ring;
  return ring;
}

}  // namespace jwt_test
