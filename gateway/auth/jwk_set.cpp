#include "gateway/auth/jwk_set.hpp"

#include "gateway/codec/base64url.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>

namespace gateway {
namespace {

std::atomic<std::uint64_t> next_generation{1};

// The member `name` of `object` as a string; null when absent or not a string.
const std::string* string_member(const nlohmann::json& object, const char* name) {
  const auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get_ptr<const std::string*>() : nullptr;
}

// The base64url-decoded member `name`; nullopt with `error` set when absent, not a string or not base64url.
std::optional<std::string> decoded_member(const nlohmann::json& object, const char* name,
                                          std::string& error) {
  const auto* text = string_member(object, name);
  std::string out;
  if (!text || !base64url_decode(*text, out)) {
    error = std::string("\"") + name + "\" missing or not base64url";
    return std::nullopt;
  }
  return out;
}

std::optional<public_key> import_key(const nlohmann::json& jwk_json, const std::string& kty,
                                     std::string& error) {
  if (kty == "RSA") {
    const auto n = decoded_member(jwk_json, "n", error);
    const auto e = n ? decoded_member(jwk_json, "e", error) : std::nullopt;
    return e ? public_key::rsa(*n, *e, error) : std::nullopt;
  }
  const auto* crv = string_member(jwk_json, "crv");
  if (kty == "EC" && crv && (*crv == "P-256" || *crv == "P-384")) {
    const auto x = decoded_member(jwk_json, "x", error);
    const auto y = x ? decoded_member(jwk_json, "y", error) : std::nullopt;
    return y ? public_key::ec(*crv == "P-256" ? key_kind::ec_p256 : key_kind::ec_p384, *x, *y, error)
             : std::nullopt;
  }
  if (kty == "OKP" && crv && *crv == "Ed25519") {
    const auto x = decoded_member(jwk_json, "x", error);
    return x ? public_key::ed25519(*x, error) : std::nullopt;
  }
  error = "unknown crv for kty " + kty;
  return std::nullopt;
}

// The usable key `jwk_json` describes; nullopt with the reason in `why` when it cannot be used.
std::optional<jwk> read_key(const nlohmann::json& jwk_json, std::string& why) {
  if (!jwk_json.is_object()) {
    why = "not a JSON object";
    return std::nullopt;
  }
  const auto* kty = string_member(jwk_json, "kty");
  if (!kty) {
    why = "no kty";
    return std::nullopt;
  }
  if (*kty == "oct") {
    why = "kty oct (a shared secret; HMAC is not accepted)";
    return std::nullopt;
  }
  if (*kty != "RSA" && *kty != "EC" && *kty != "OKP") {
    why = "unknown kty";
    return std::nullopt;
  }
  if (const auto use = jwk_json.find("use"); use != jwk_json.end() && *use != "sig") {
    why = "use is not \"sig\"";
    return std::nullopt;
  }
  if (const auto ops = jwk_json.find("key_ops");
      ops != jwk_json.end() &&
      (!ops->is_array() || std::find(ops->begin(), ops->end(), "verify") == ops->end())) {
    why = "key_ops without \"verify\"";
    return std::nullopt;
  }
  std::string kid_text;
  if (const auto kid = jwk_json.find("kid"); kid != jwk_json.end()) {
    if (!kid->is_string()) {
      why = "kid is not a string";
      return std::nullopt;
    }
    kid_text = kid->get<std::string>();
  }
  std::optional<jwt_algorithm> alg;
  if (const auto a = jwk_json.find("alg"); a != jwk_json.end()) {
    alg = a->is_string() ? parse_jwt_algorithm(a->get<std::string>()) : std::nullopt;
    if (!alg) {
      why = "alg is no accepted signature algorithm";
      return std::nullopt;
    }
  }
  std::string error;
  auto imported = import_key(jwk_json, *kty, error);
  if (!imported) {
    why = error;
    return std::nullopt;
  }
  if (alg && !fits(imported->kind(), *alg)) {
    why = "alg " + std::string(to_string(*alg)) + " does not fit the key";
    return std::nullopt;
  }
  return jwk{.kid = std::move(kid_text), .alg = alg, .key = std::move(*imported)};
}

}  // namespace

bool usable_for(const jwk& key, jwt_algorithm algorithm) {
  return fits(key.key.kind(), algorithm) && (!key.alg || *key.alg == algorithm);
}

std::shared_ptr<const jwk_set> jwk_set::parse(std::string_view json, std::string& error,
                                              std::vector<std::string>* skipped) {
  const auto doc = nlohmann::json::parse(json, nullptr, false);
  if (doc.is_discarded()) {
    error = "JWKS is not JSON";
    return nullptr;
  }
  const auto keys = doc.is_object() ? doc.find("keys") : doc.end();
  if (!doc.is_object() || keys == doc.end() || !keys->is_array()) {
    error = "JWKS has no \"keys\" array";
    return nullptr;
  }
  std::vector<jwk> usable;
  for (std::size_t i = 0; i < keys->size(); ++i) {
    std::string why;
    if (auto key = read_key((*keys)[i], why)) {
      usable.push_back(std::move(*key));
    } else if (skipped) {
      const auto* kid = (*keys)[i].is_object() ? string_member((*keys)[i], "kid") : nullptr;
      skipped->push_back("key " + std::to_string(i) + (kid ? " (kid \"" + *kid + "\")" : "") + ": " + why);
    }
  }
  if (usable.empty()) {
    error = "JWKS has no usable key (" + std::to_string(keys->size()) + " skipped)";
    return nullptr;
  }
  return std::shared_ptr<const jwk_set>(new jwk_set(std::move(usable), next_generation.fetch_add(1)));
}

std::vector<std::string> jwk_set::kids() const {
  std::vector<std::string> out;
  out.reserve(keys_.size());
  for (const auto& k : keys_) out.push_back(k.kid);
  return out;
}

const jwk* jwk_set::find(std::optional<std::string_view> kid, jwt_algorithm algorithm) const {
  if (kid) {
    const jwk* first = nullptr;
    for (const auto& k : keys_) {
      if (k.kid != *kid) continue;
      if (usable_for(k, algorithm)) return &k;
      if (!first) first = &k;
    }
    return first;
  }
  const jwk* only = nullptr;
  for (const auto& k : keys_) {
    if (!usable_for(k, algorithm)) continue;
    if (only) return nullptr;
    only = &k;
  }
  return only;
}

}  // namespace gateway
