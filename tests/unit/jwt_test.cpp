// JSON Web Token signatures: every algorithm verifies its own tokens and refuses any altered byte; "none",
// HMAC (also the classic confusion of an RSA public key used as an HMAC secret) and algorithms a route does
// not accept are refused; the key a token names must be one that fits its algorithm.

#include "gateway/auth/jwt.hpp"
#include "gateway/codec/base64url.hpp"
#include "tests/support/jwt_signer.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

using namespace gateway;
using jwt_test::keys;

namespace {

constexpr std::int64_t now = 1'700'000'000;
constexpr std::string_view claims = R"({"sub":"user-1","iss":"https://idp.example","exp":1700000600})";

std::shared_ptr<const jwk_set> parse_set(const std::string& json) {
  std::string error;
  auto set = jwk_set::parse(json, error);
  INFO(error);
  REQUIRE(set);
  return set;
}

const jwk_set& ring_set() {
  static const auto set = parse_set(keys().jwks());
  return *set;
}

std::string header(std::string_view alg, std::string_view kid) {
  return R"({"alg":")" + std::string(alg) + R"(","kid":")" + std::string(kid) + R"(","typ":"JWT"})";
}

struct algorithm_case {
  std::string alg;
  EVP_PKEY* key;
  std::string kid;
};

std::vector<algorithm_case> algorithm_cases() {
  const auto& k = keys();
  return {{"RS256", k.rsa.get(), "rsa-1"},     {"RS384", k.rsa.get(), "rsa-1"},
          {"RS512", k.rsa.get(), "rsa-1"},     {"PS256", k.rsa.get(), "rsa-1"},
          {"ES256", k.ec256.get(), "ec256-1"}, {"ES384", k.ec384.get(), "ec384-1"},
          {"EdDSA", k.ed.get(), "ed-1"}};
}

std::string token_for(const algorithm_case& c, std::string_view payload = claims) {
  return jwt_test::token(c.key, c.alg, header(c.alg, c.kid), payload);
}

jwt_failure failure_of(std::string_view token, const jwk_set& set = ring_set(), const jwt_rules& rules = {}) {
  return verify_jwt(token, set, rules, now).failure;
}

}  // namespace

TEST_CASE("jwt: every algorithm verifies a token signed with it", "[jwt]") {
  for (const auto& c : algorithm_cases()) {
    INFO(c.alg);
    const auto verdict = verify_jwt(token_for(c), ring_set(), {}, now);
    CHECK(verdict.failure == jwt_failure::none);
    CHECK(verdict.description.empty());
    CHECK(verdict.expires == 1700000600);
    CHECK(parse_jwt_algorithm(c.alg));
    CHECK(to_string(*parse_jwt_algorithm(c.alg)) == c.alg);
  }
}

TEST_CASE("jwt: a one-bit change anywhere in a token refuses it", "[jwt]") {
  for (const auto& c : algorithm_cases()) {
    INFO(c.alg);
    const auto good = token_for(c);
    const auto dot2 = good.rfind('.');
    for (std::size_t i = 0; i < good.size(); ++i) {
      auto bad = good;
      bad[i] = static_cast<char>(bad[i] ^ 1);
      const auto f = failure_of(bad);
      INFO("position " << i);
      CHECK(f != jwt_failure::none);
      // In the signature part the only other outcome is a character that is no longer base64url.
      if (i > dot2) CHECK((f == jwt_failure::bad_signature || f == jwt_failure::malformed));
    }
    // A bit of the decoded signature, header or payload, encoded again: still readable, no longer signed.
    std::string sig;
    REQUIRE(base64url_decode(std::string_view(good).substr(dot2 + 1), sig));
    sig[sig.size() / 2] ^= 0x10;
    CHECK(failure_of(good.substr(0, dot2 + 1) + jwt_test::b64url(sig)) == jwt_failure::bad_signature);
    const auto input = jwt_test::signing_input(header(c.alg, c.kid), claims);
    const auto signature = good.substr(dot2);
    // "JWT" -> "JWU", "user-1" -> "user-0": one bit each.
    auto flipped_header = header(c.alg, c.kid);
    flipped_header.replace(flipped_header.find("JWT"), 3, "JWU");
    CHECK(failure_of(jwt_test::signing_input(flipped_header, claims) + signature) ==
          jwt_failure::bad_signature);
    std::string flipped_claims(claims);
    flipped_claims.replace(flipped_claims.find("user-1"), 6, "user-0");
    CHECK(failure_of(jwt_test::signing_input(header(c.alg, c.kid), flipped_claims) + signature) ==
          jwt_failure::bad_signature);
    CHECK(failure_of(input + signature) == jwt_failure::none);
  }
}

TEST_CASE("jwt: ES signatures are raw r||s of the curve's size only", "[jwt]") {
  const auto good = token_for(algorithm_cases()[4]);
  const auto dot2 = good.rfind('.');
  std::string sig;
  REQUIRE(base64url_decode(std::string_view(good).substr(dot2 + 1), sig));
  REQUIRE(sig.size() == 64);
  const auto with = [&](const std::string& s) { return good.substr(0, dot2 + 1) + jwt_test::b64url(s); };
  CHECK(failure_of(with(sig.substr(0, 63))) == jwt_failure::bad_signature);
  CHECK(failure_of(with(sig + '\0')) == jwt_failure::bad_signature);
  CHECK(failure_of(with("")) == jwt_failure::bad_signature);
  CHECK(failure_of(with(std::string(64, '\0'))) == jwt_failure::bad_signature);
}

TEST_CASE("jwt: alg none and HMAC are refused, also with an RSA public key as the HMAC secret", "[jwt]") {
  for (const auto* alg : {"none", "None", "NONE", ""}) {
    INFO(alg);
    CHECK(failure_of(jwt_test::signing_input(header(alg, "rsa-1"), claims) + ".") == jwt_failure::algorithm);
    CHECK(failure_of(jwt_test::signing_input(R"({"alg":")" + std::string(alg) + R"("})", claims) + ".") ==
          jwt_failure::algorithm);
  }
  const auto& rsa = keys().rsa;
  const auto pem = jwt_test::public_pem(rsa.get());
  const auto n = jwt_test::bn_param(rsa.get(), "n");
  for (const auto* alg : {"HS256", "HS384", "HS512"}) {
    for (const auto& secret : {pem, n, jwt_test::jwk(rsa.get(), "rsa-1")}) {
      const auto input = jwt_test::signing_input(header(alg, "rsa-1"), claims);
      const auto token = input + "." + jwt_test::b64url(jwt_test::hmac_sha256(secret, input));
      CHECK(failure_of(token) == jwt_failure::algorithm);
    }
  }
  // A set that also publishes the secret as an "oct" key under the RSA key's kid: the oct key is skipped.
  std::vector<std::string> skipped;
  std::string error;
  const auto set = jwk_set::parse(R"({"keys":[{"kty":"oct","kid":"rsa-1","k":")" + jwt_test::b64url(pem) +
                                      R"("},)" + jwt_test::jwk(rsa.get(), "rsa-1") + "]}",
                                  error, &skipped);
  REQUIRE(set);
  CHECK(set->size() == 1);
  CHECK(skipped.size() == 1);
  const auto input = jwt_test::signing_input(header("HS256", "rsa-1"), claims);
  CHECK(failure_of(input + "." + jwt_test::b64url(jwt_test::hmac_sha256(pem, input)), *set) ==
        jwt_failure::algorithm);
  CHECK(parse_jwt_algorithm("HS256") == std::nullopt);
  CHECK(parse_jwt_algorithm("none") == std::nullopt);
  CHECK(parse_jwt_algorithm("rs256") == std::nullopt);
  CHECK(parse_jwt_algorithm("ES512") == std::nullopt);
}

TEST_CASE("jwt: an algorithm outside the route's list is refused", "[jwt]") {
  jwt_rules rules;
  rules.algorithms = {jwt_algorithm::es256, jwt_algorithm::eddsa};
  const auto cases = algorithm_cases();
  CHECK(failure_of(token_for(cases[0]), ring_set(), rules) == jwt_failure::algorithm);  // RS256
  CHECK(failure_of(token_for(cases[3]), ring_set(), rules) == jwt_failure::algorithm);  // PS256
  CHECK(failure_of(token_for(cases[4]), ring_set(), rules) == jwt_failure::none);       // ES256
  CHECK(failure_of(token_for(cases[6]), ring_set(), rules) == jwt_failure::none);       // EdDSA
  CHECK(verify_jwt(token_for(cases[0]), ring_set(), rules, now).description == "algorithm not accepted");
}

TEST_CASE("jwt: the key must fit the algorithm, and its own alg must be the token's", "[jwt]") {
  const auto& k = keys();
  const auto set = parse_set(R"({"keys":[)" + jwt_test::jwk(k.rsa.get(), "rsa-1", R"(,"alg":"RS256")") + "," +
                             jwt_test::jwk(k.ec256.get(), "ec256-1") + "]}");
  const auto rs256 = jwt_test::token(k.rsa.get(), "RS256", header("RS256", "rsa-1"), claims);
  CHECK(failure_of(rs256, *set) == jwt_failure::none);
  // The same RSA key signing PS256 and RS384: a valid signature, but not the algorithm the key is for.
  CHECK(failure_of(jwt_test::token(k.rsa.get(), "PS256", header("PS256", "rsa-1"), claims), *set) ==
        jwt_failure::bad_signature);
  CHECK(failure_of(jwt_test::token(k.rsa.get(), "RS384", header("RS384", "rsa-1"), claims), *set) ==
        jwt_failure::bad_signature);
  // An ES256 token naming the RSA key's kid; an ES384 token naming a P-256 key.
  CHECK(failure_of(jwt_test::token(k.ec256.get(), "ES256", header("ES256", "rsa-1"), claims), *set) ==
        jwt_failure::bad_signature);
  CHECK(failure_of(jwt_test::token(k.ec384.get(), "ES384", header("ES384", "ec256-1"), claims), *set) ==
        jwt_failure::bad_signature);
  CHECK(failure_of(jwt_test::token(k.ed.get(), "EdDSA", header("EdDSA", "rsa-1"), claims), *set) ==
        jwt_failure::bad_signature);
}

TEST_CASE("jwt: the kid picks the key, and without one exactly one key must fit", "[jwt]") {
  const auto& k = keys();
  CHECK(failure_of(jwt_test::token(k.ec256.get(), "ES256", header("ES256", "ec256-9"), claims)) ==
        jwt_failure::unknown_kid);
  CHECK(verify_jwt(jwt_test::token(k.ec256.get(), "ES256", header("ES256", "nope"), claims), ring_set(), {},
                   now)
            .description == "no key for kid");
  // The ring holds one key of each kind: a token without kid finds it.
  CHECK(failure_of(jwt_test::token(k.ed.get(), "EdDSA", R"({"alg":"EdDSA"})", claims)) == jwt_failure::none);
  CHECK(failure_of(jwt_test::token(k.ec256.get(), "ES256", R"({"alg":"ES256"})", claims)) ==
        jwt_failure::none);
  // Two P-256 keys: a token without kid is not guessed at, one with a kid finds its key.
  const auto two = parse_set(R"({"keys":[)" + jwt_test::jwk(k.ec256.get(), "a") + "," +
                             jwt_test::jwk(k.ec256_other.get(), "b") + "]}");
  CHECK(failure_of(jwt_test::token(k.ec256.get(), "ES256", R"({"alg":"ES256"})", claims), *two) ==
        jwt_failure::unknown_kid);
  CHECK(failure_of(jwt_test::token(k.ec256_other.get(), "ES256", header("ES256", "b"), claims), *two) ==
        jwt_failure::none);
  CHECK(failure_of(jwt_test::token(k.ec256_other.get(), "ES256", header("ES256", "a"), claims), *two) ==
        jwt_failure::bad_signature);
  // No key fits EdDSA in that set.
  CHECK(failure_of(jwt_test::token(k.ed.get(), "EdDSA", R"({"alg":"EdDSA"})", claims), *two) ==
        jwt_failure::unknown_kid);
}

TEST_CASE("jwt: threads verify with one shared key set at once", "[jwt]") {
  const auto cases = algorithm_cases();
  std::vector<std::string> tokens;
  for (const auto& c : cases) tokens.push_back(token_for(c));
  std::atomic<int> accepted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < 10; ++round) {
        for (const auto& token : tokens) accepted += failure_of(token) == jwt_failure::none;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(accepted == static_cast<int>(4 * 10 * tokens.size()));
}
