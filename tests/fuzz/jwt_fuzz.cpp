// libFuzzer target: JSON Web Tokens and key sets (gateway/auth), against nlohmann::json and a reference
// base64url decoder written here.
// The whole input is read three ways:
//   - as a token, verified against a fixed set (a P-256 and an Ed25519 key);
//   - as a JWKS document;
//   - as a control byte and a claims set, which this target signs with the set's Ed25519 key (its private
//     half is embedded below) so that the checks after the signature run on every input.
//
// Invariants: base64url_decode accepts exactly what the reference decoder does and gives the same bytes,
// and base64url_append gives the text back. A token is malformed exactly when the reference says its form
// is wrong (size, three parts, base64url, a header and payload that nlohmann reads as objects with no NUL,
// no name repeated in an object, no value inside more than 16 containers), or its header has "crit", an
// "alg" that is no string or a "kid" that is no string; an "alg" string that is no accepted name gives
// `algorithm`. For a signed claims set, the verdict is the one a reference evaluation of the same rules on
// nlohmann's document gives (exact comparisons of exp and nbf as real numbers); an accepted token's wanted
// claims are nlohmann's values (a string equal, a number's text parsing to the same number, a boolean's
// name, otherwise empty) and its expiry is exp cut to whole seconds. A key set is refused when nlohmann
// finds no "keys" array, and otherwise keeps and skips one key per element.

#include "gateway/auth/jwt.hpp"
#include "gateway/codec/base64url.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <openssl/evp.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace {

using json = nlohmann::json;
using gateway::jwt_failure;

constexpr std::int64_t now = 1'700'000'000;
constexpr std::string_view jwks =
    R"({"keys":[{"kty":"EC","crv":"P-256","x":"iW0_QxehVA05yOZTHqccaBJXJizTm8-QEWKhCmVOP7Y",)"
    R"("y":"VVc-0f9uiLetC8LQ81XcXv_iUe7zJkCV_ugPHD9LtfI","kid":"ec"},)"
    R"({"kty":"OKP","crv":"Ed25519","x":"c2wIX5L0D2Ym5sngM6d9T5QsrnHlR50EF8vFYnaMe2E","kid":"ed"}]})";
const std::vector<std::string> wanted = {"sub", "n", "scope", "aud", "exp", "x", ""};

const gateway::jwk_set& fixed_set() {
  static const auto set = [] {
    std::string error;
    auto s = gateway::jwk_set::parse(jwks, error);
    FUZZ_CHECK(s && s->size() == 2);
    return s;
  }();
  return *set;
}

// The Ed25519 key "ed" of the fixed set: the seed bytes 0x40, 0x47, 0x4e, ... (7 apart).
EVP_PKEY* signing_key() {
  static const std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key = [] {
    unsigned char seed[32];
    for (int i = 0; i < 32; ++i) seed[i] = static_cast<unsigned char>(0x40 + i * 7);
    return std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>(
        EVP_PKEY_new_raw_private_key_ex(nullptr, "ED25519", nullptr, seed, 32), EVP_PKEY_free);
  }();
  FUZZ_CHECK(key != nullptr);
  return key.get();
}

std::optional<std::string> reference_b64url(std::string_view text) {
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  unsigned acc = 0, bits = 0;
  for (const char c : text) {
    const auto v = alphabet.find(c);
    if (v == std::string::npos) return std::nullopt;
    acc = (acc << 6 | static_cast<unsigned>(v)) & 0xffffu;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>(acc >> bits & 0xff);
    }
  }
  if (bits >= 6 || (acc & ((1u << bits) - 1)) != 0) return std::nullopt;  // a lone character, or bits left
  return out;
}

std::optional<std::string> checked_decode(std::string_view part) {
  std::string ours;
  const bool ok = gateway::base64url_decode(part, ours);
  const auto theirs = reference_b64url(part);
  FUZZ_CHECK(ok == theirs.has_value());
  if (!ok) return std::nullopt;
  FUZZ_CHECK(ours == *theirs);
  std::string again;
  gateway::base64url_append(again, ours.data(), ours.size());
  FUZZ_CHECK(again == part);
  return ours;
}

// Reads a JSON text as nlohmann's SAX parser sees it, noting a repeated name and the deepest value.
struct shape_reader : json::json_sax_t {
  std::vector<std::set<std::string>> names;  // of each open object; an array holds an empty placeholder
  bool repeated = false;
  std::size_t deepest = 0;  // the most containers around one value

  bool value() {
    deepest = std::max(deepest, names.size());
    return true;
  }
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    repeated = repeated || !names.back().insert(k).second;
    return value();
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
  bool open() {
    value();
    names.emplace_back();
    return true;
  }
  bool close() {
    names.pop_back();
    return true;
  }
};

// The JSON object `text` holds when it is one, by the rules verify_jwt states.
std::optional<json> reference_object(const std::string& text) {
  if (text.find('\0') != std::string::npos) return std::nullopt;
  auto doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return std::nullopt;
  shape_reader shape;
  FUZZ_CHECK(json::sax_parse(text, &shape));
  if (shape.repeated || shape.deepest > 16) return std::nullopt;
  return doc;
}

// The wanted claims of an accepted token against nlohmann's payload.
void check_claims(const gateway::jwt_verdict& verdict, const json& payload) {
  FUZZ_CHECK(verdict.claims.size() == wanted.size());
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    const auto& ours = verdict.claims[i];
    const auto it = payload.find(wanted[i]);
    if (it == payload.end() || !(it->is_string() || it->is_number() || it->is_boolean())) {
      FUZZ_CHECK(ours.empty());
    } else if (it->is_string()) {
      FUZZ_CHECK(ours == it->get<std::string>());
    } else if (it->is_boolean()) {
      FUZZ_CHECK(ours == (it->get<bool>() ? "true" : "false"));
    } else {
      FUZZ_CHECK(json::parse(ours, nullptr, false) == *it);
    }
  }
}

// The token `input` against the fixed set: malformed, algorithm and the rest as the reference sees it.
void check_token(std::string_view input) {
  const auto verdict = gateway::verify_jwt(input, fixed_set(), {}, now, wanted);
  FUZZ_CHECK((verdict.failure == jwt_failure::none) == verdict.description.empty());
  if (input.empty()) return FUZZ_CHECK(verdict.failure == jwt_failure::missing);
  const auto dot1 = input.find('.');
  const auto dot2 = dot1 == std::string_view::npos ? dot1 : input.find('.', dot1 + 1);
  const bool three = dot2 != std::string_view::npos && input.find('.', dot2 + 1) == std::string_view::npos;
  std::optional<std::string> header_text, payload_text, signature;
  if (three) {
    header_text = checked_decode(input.substr(0, dot1));
    payload_text = checked_decode(input.substr(dot1 + 1, dot2 - dot1 - 1));
    signature = checked_decode(input.substr(dot2 + 1));
  }
  const auto header = header_text ? reference_object(*header_text) : std::nullopt;
  const auto payload = payload_text ? reference_object(*payload_text) : std::nullopt;
  if (input.size() > gateway::max_jwt_size || !header || !payload || !signature)
    return FUZZ_CHECK(verdict.failure == jwt_failure::malformed);
  const auto alg = header->find("alg"), kid = header->find("kid");
  if (header->contains("crit") || alg == header->end() || !alg->is_string() ||
      (kid != header->end() && !kid->is_string()))
    return FUZZ_CHECK(verdict.failure == jwt_failure::malformed);
  if (!gateway::parse_jwt_algorithm(alg->get<std::string>()))
    return FUZZ_CHECK(verdict.failure == jwt_failure::algorithm);
  // Before the signature verifies, nothing else may be malformed; after it, only exp and nbf.
  const bool signed_ok = verdict.failure != jwt_failure::unknown_kid &&
                         verdict.failure != jwt_failure::bad_signature &&
                         verdict.failure != jwt_failure::algorithm;
  FUZZ_CHECK(verdict.failure != jwt_failure::malformed || signed_ok);
  if (verdict.failure == jwt_failure::none) check_claims(verdict, *payload);
}

// Whether `claim` holds `value` as verify_jwt's rules define it.
bool reference_holds(const json& claim, const std::string& value) {
  if (claim.is_array()) {
    for (const auto& e : claim)
      if (e.is_string() && e.get<std::string>() == value) return true;
    return false;
  }
  if (!claim.is_string()) return false;
  std::vector<std::string> words(1);
  for (const char c : claim.get<std::string>()) {
    if (c == ' ') {
      words.emplace_back();
    } else {
      words.back().push_back(c);
    }
  }
  return std::find(words.begin(), words.end(), value) != words.end();
}

jwt_failure reference_verdict(const json& claims, const gateway::jwt_rules& rules) {
  const auto leeway = static_cast<long double>(rules.leeway.count());
  const auto at = static_cast<long double>(now);
  if (!rules.algorithms.empty()) return jwt_failure::algorithm;  // only ES256, never the EdDSA token
  if (claims.contains("exp")) {
    if (!claims["exp"].is_number()) return jwt_failure::malformed;
    if (at > claims["exp"].get<long double>() + leeway) return jwt_failure::expired;
  }
  if (claims.contains("nbf")) {
    if (!claims["nbf"].is_number()) return jwt_failure::malformed;
    if (at + leeway < claims["nbf"].get<long double>()) return jwt_failure::not_yet_valid;
  }
  const auto in = [](const std::vector<std::string>& list, const json& v) {
    return v.is_string() && std::find(list.begin(), list.end(), v.get<std::string>()) != list.end();
  };
  if (!rules.issuers.empty() && !(claims.contains("iss") && in(rules.issuers, claims["iss"])))
    return jwt_failure::issuer;
  if (!rules.audiences.empty()) {
    bool ok = claims.contains("aud") && in(rules.audiences, claims["aud"]);
    if (claims.contains("aud") && claims["aud"].is_array())
      for (const auto& a : claims["aud"]) ok = ok || in(rules.audiences, a);
    if (!ok) return jwt_failure::audience;
  }
  for (const auto& name : rules.required_claims)
    if (!claims.contains(name) || claims[name].is_null()) return jwt_failure::missing_claim;
  for (const auto& r : rules.claim_values) {
    if (!claims.contains(r.claim)) return jwt_failure::forbidden;
    for (const auto& v : r.values)
      if (!reference_holds(claims[r.claim], v)) return jwt_failure::forbidden;
  }
  return jwt_failure::none;
}

// `payload` signed with the fixed Ed25519 key, under rules chosen by the bits of `control`.
void check_signed(std::uint8_t control, std::string_view payload) {
  gateway::jwt_rules rules;
  if (control & 1) rules.issuers = {"iss-a", "iss-b"};
  if (control & 2) rules.audiences = {"api", "web"};
  if (control & 4) rules.required_claims = {"sub"};
  if (control & 8) rules.claim_values.push_back({"scope", {"read"}});
  if (control & 16) rules.claim_values.push_back({"roles", {"admin", "ops"}});
  if (control & 32) rules.leeway = std::chrono::seconds(60);
  if ((control & 0xc0) == 0xc0) rules.algorithms = {gateway::jwt_algorithm::es256};
  std::string input;
  gateway::base64url_append(input, R"({"alg":"EdDSA","kid":"ed"})", 26);
  input += '.';
  gateway::base64url_append(input, payload.data(), payload.size());
  const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  unsigned char sig[64];
  std::size_t sig_len = sizeof sig;
  FUZZ_CHECK(EVP_DigestSignInit_ex(ctx.get(), nullptr, nullptr, nullptr, nullptr, signing_key(), nullptr) ==
             1);
  FUZZ_CHECK(EVP_DigestSign(ctx.get(), sig, &sig_len, reinterpret_cast<const unsigned char*>(input.data()),
                            input.size()) == 1);
  input += '.';
  gateway::base64url_append(input, sig, sig_len);

  const auto verdict = gateway::verify_jwt(input, fixed_set(), rules, now, wanted);
  const auto claims = reference_object(std::string(payload));
  if (input.size() > gateway::max_jwt_size || !claims)
    return FUZZ_CHECK(verdict.failure == jwt_failure::malformed);
  FUZZ_CHECK(verdict.failure == reference_verdict(*claims, rules));
  if (verdict.failure != jwt_failure::none) return;
  check_claims(verdict, *claims);
  if (const auto exp = claims->find("exp"); exp == claims->end()) {
    FUZZ_CHECK(verdict.expires == 0);
  } else if (exp->is_number_integer() || exp->is_number_unsigned()) {
    FUZZ_CHECK(static_cast<long double>(verdict.expires) ==
               std::min<long double>(exp->get<long double>(), 9223372036854775807.0L));
  } else if (std::fabs(exp->get<double>()) < 9e18) {
    FUZZ_CHECK(verdict.expires == static_cast<std::int64_t>(std::floor(exp->get<double>())));
  }
}

void check_jwks(std::string_view input) {
  std::string error;
  std::vector<std::string> skipped;
  const auto set = gateway::jwk_set::parse(input, error, &skipped);
  const auto doc = json::parse(input, nullptr, false);
  const bool has_keys =
      !doc.is_discarded() && doc.is_object() && doc.contains("keys") && doc["keys"].is_array();
  if (!set) return FUZZ_CHECK(!error.empty());
  FUZZ_CHECK(has_keys);
  FUZZ_CHECK(set->size() >= 1 && set->size() + skipped.size() == doc["keys"].size());
  FUZZ_CHECK(set->kids().size() == set->size());
  (void)gateway::verify_jwt(input, *set, {}, now);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  check_token(input);
  check_jwks(input);
  if (size > 0) check_signed(data[0], input.substr(1));
  return 0;
}
