#include "gateway/auth/public_key.hpp"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

namespace gateway {
namespace {

template <auto free_fn>
struct openssl_free {
  template <class T>
  void operator()(T* p) const {
    free_fn(p);
  }
};
using bignum = std::unique_ptr<BIGNUM, openssl_free<BN_free>>;
using param_builder = std::unique_ptr<OSSL_PARAM_BLD, openssl_free<OSSL_PARAM_BLD_free>>;
using params = std::unique_ptr<OSSL_PARAM, openssl_free<OSSL_PARAM_free>>;
using pkey_context = std::unique_ptr<EVP_PKEY_CTX, openssl_free<EVP_PKEY_CTX_free>>;
using md_context = std::unique_ptr<EVP_MD_CTX, openssl_free<EVP_MD_CTX_free>>;
using ecdsa_signature = std::unique_ptr<ECDSA_SIG, openssl_free<ECDSA_SIG_free>>;

const unsigned char* bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

bignum to_bignum(std::string_view big_endian) {
  return bignum(BN_bin2bn(bytes(big_endian), static_cast<int>(big_endian.size()), nullptr));
}

// The key `key_type` ("RSA", "EC", "ED25519") described by the parameters `bld` holds; null on failure.
std::shared_ptr<EVP_PKEY> from_data(const char* key_type, OSSL_PARAM_BLD* bld) {
  const params p(OSSL_PARAM_BLD_to_param(bld));
  const pkey_context ctx(EVP_PKEY_CTX_new_from_name(nullptr, key_type, nullptr));
  EVP_PKEY* key = nullptr;
  if (!p || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &key, EVP_PKEY_PUBLIC_KEY, p.get()) != 1) {
    EVP_PKEY_free(key);
    return nullptr;
  }
  return std::shared_ptr<EVP_PKEY>(key, EVP_PKEY_free);
}

// The digest an algorithm signs, by OpenSSL's name; null for EdDSA, which hashes on its own.
const char* digest_name(jwt_algorithm algorithm) {
  switch (algorithm) {
    case jwt_algorithm::rs256:
    case jwt_algorithm::ps256:
    case jwt_algorithm::es256:
      return "SHA256";
    case jwt_algorithm::rs384:
    case jwt_algorithm::es384:
      return "SHA384";
    case jwt_algorithm::rs512:
      return "SHA512";
    case jwt_algorithm::eddsa:
      break;
  }
  return nullptr;
}

// A JWS ECDSA signature (r and s, each `half` bytes, big-endian) in the DER form OpenSSL verifies; empty
// when it cannot be built.
std::string ecdsa_der(std::string_view raw, std::size_t half) {
  ecdsa_signature sig(ECDSA_SIG_new());
  bignum r = to_bignum(raw.substr(0, half)), s = to_bignum(raw.substr(half));
  if (!sig || !r || !s || ECDSA_SIG_set0(sig.get(), r.get(), s.get()) != 1) return {};
  r.release();  // owned by sig from here
  s.release();
  const int size = i2d_ECDSA_SIG(sig.get(), nullptr);
  if (size <= 0) return {};
  std::string der(static_cast<std::size_t>(size), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  if (i2d_ECDSA_SIG(sig.get(), &out) != size) return {};
  return der;
}

bool verify_digest(EVP_PKEY* key, jwt_algorithm algorithm, std::string_view input,
                   std::string_view signature) {
  const md_context md(EVP_MD_CTX_new());
  EVP_PKEY_CTX* pctx = nullptr;  // owned by md
  if (!md ||
      EVP_DigestVerifyInit_ex(md.get(), &pctx, digest_name(algorithm), nullptr, nullptr, key, nullptr) != 1)
    return false;
  if (algorithm == jwt_algorithm::ps256 &&
      (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1 ||
       EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) != 1))
    return false;
  return EVP_DigestVerify(md.get(), bytes(signature), signature.size(), bytes(input), input.size()) == 1;
}

}  // namespace

bool fits(key_kind kind, jwt_algorithm algorithm) {
  switch (algorithm) {
    case jwt_algorithm::rs256:
    case jwt_algorithm::rs384:
    case jwt_algorithm::rs512:
    case jwt_algorithm::ps256:
      return kind == key_kind::rsa;
    case jwt_algorithm::es256:
      return kind == key_kind::ec_p256;
    case jwt_algorithm::es384:
      return kind == key_kind::ec_p384;
    case jwt_algorithm::eddsa:
      return kind == key_kind::ed25519;
  }
  return false;
}

std::optional<public_key> public_key::rsa(std::string_view n, std::string_view e, std::string& error) {
  const bignum bn_n = to_bignum(n), bn_e = to_bignum(e);
  if (!bn_n || !bn_e) {
    ERR_clear_error();
    error = "out of memory";
    return std::nullopt;
  }
  const int bits = BN_num_bits(bn_n.get());
  if (bits < min_rsa_bits || bits > max_rsa_bits || !BN_is_odd(bn_n.get())) {
    error = "RSA modulus of " + std::to_string(bits) + " bits (" + std::to_string(min_rsa_bits) + " to " +
            std::to_string(max_rsa_bits) + ", odd)";
    return std::nullopt;
  }
  if (!BN_is_odd(bn_e.get()) || BN_is_one(bn_e.get()) || BN_num_bits(bn_e.get()) > 64) {
    error = "RSA exponent not odd, 1, or over 64 bits";
    return std::nullopt;
  }
  const param_builder bld(OSSL_PARAM_BLD_new());
  std::shared_ptr<EVP_PKEY> key;
  if (bld && OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, bn_n.get()) == 1 &&
      OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, bn_e.get()) == 1)
    key = from_data("RSA", bld.get());
  if (!key) {
    ERR_clear_error();
    error = "RSA key not imported";
    return std::nullopt;
  }
  return public_key(key_kind::rsa, std::move(key));
}

std::optional<public_key> public_key::ec(key_kind kind, std::string_view x, std::string_view y,
                                         std::string& error) {
  const bool p256 = kind == key_kind::ec_p256;
  const std::size_t size = p256 ? 32 : 48;
  if ((!p256 && kind != key_kind::ec_p384) || x.size() != size || y.size() != size) {
    error = "EC coordinates not " + std::to_string(size) + " bytes each";
    return std::nullopt;
  }
  std::string point = "\x04";  // SEC 1 uncompressed form: 04 || x || y
  point.append(x).append(y);
  const param_builder bld(OSSL_PARAM_BLD_new());
  std::shared_ptr<EVP_PKEY> key;
  if (bld &&
      OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME, p256 ? "P-256" : "P-384", 0) ==
          1 &&
      OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()) == 1)
    key = from_data("EC", bld.get());
  // The import already refuses a point off the curve; the check also refuses the point at infinity and a
  // point outside the group of the base point's order.
  const pkey_context check(key ? EVP_PKEY_CTX_new_from_pkey(nullptr, key.get(), nullptr) : nullptr);
  if (!check || EVP_PKEY_public_check(check.get()) != 1) {
    ERR_clear_error();
    error = "EC point not on the curve";
    return std::nullopt;
  }
  return public_key(kind, std::move(key));
}

std::optional<public_key> public_key::ed25519(std::string_view x, std::string& error) {
  if (x.size() != 32) {
    error = "Ed25519 key not 32 bytes";
    return std::nullopt;
  }
  const param_builder bld(OSSL_PARAM_BLD_new());
  std::shared_ptr<EVP_PKEY> key;
  if (bld && OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, x.data(), x.size()) == 1)
    key = from_data("ED25519", bld.get());
  if (!key) {
    ERR_clear_error();
    error = "Ed25519 key not imported";
    return std::nullopt;
  }
  return public_key(key_kind::ed25519, std::move(key));
}

bool public_key::verify(jwt_algorithm algorithm, std::string_view signing_input,
                        std::string_view signature) const {
  if (!fits(kind_, algorithm)) return false;
  bool ok = false;
  if (kind_ == key_kind::ec_p256 || kind_ == key_kind::ec_p384) {
    const std::size_t half = kind_ == key_kind::ec_p256 ? 32 : 48;
    if (signature.size() != 2 * half) return false;
    const auto der = ecdsa_der(signature, half);
    ok = !der.empty() && verify_digest(key_.get(), algorithm, signing_input, der);
  } else {
    ok = verify_digest(key_.get(), algorithm, signing_input, signature);
  }
  if (!ok) ERR_clear_error();
  return ok;
}

}  // namespace gateway
