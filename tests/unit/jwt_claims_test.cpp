// JSON Web Tokens past their signature, and before it: the token's form (malformed), the time window with
// leeway, issuer, audience, required claims and claim values; the claims handed to the route; and
// descriptions that never repeat what the token holds.

#include "gateway/auth/jwt.hpp"
#include "tests/support/jwt_signer.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace gateway;
using jwt_test::keys;

namespace {

constexpr std::int64_t now = 1'700'000'000;

const jwk_set& ring_set() {
  static const auto set = [] {
    std::string error;
    auto s = jwk_set::parse(keys().jwks(), error);
    REQUIRE(s);
    return s;
  }();
  return *set;
}

// An EdDSA token (the quickest to sign) of `payload`, with `header_json` when given.
std::string signed_token(std::string_view payload,
                         std::string_view header_json = R"({"alg":"EdDSA","kid":"ed-1"})") {
  return jwt_test::token(keys().ed.get(), "EdDSA", header_json, payload);
}

jwt_verdict check(std::string_view token, const jwt_rules& rules = {}, std::int64_t at = now,
                  std::span<const std::string> wanted = {}) {
  return verify_jwt(token, ring_set(), rules, at, wanted);
}

jwt_failure failure_of(std::string_view payload, const jwt_rules& rules = {}, std::int64_t at = now) {
  return check(signed_token(payload), rules, at).failure;
}

}  // namespace

TEST_CASE("jwt: tokens not of the compact form are malformed", "[jwt]") {
  const auto good = signed_token(R"({"sub":"a"})");
  REQUIRE(check(good).failure == jwt_failure::none);
  const auto dot1 = good.find('.'), dot2 = good.rfind('.');
  const auto h = good.substr(0, dot1), p = good.substr(dot1 + 1, dot2 - dot1 - 1), s = good.substr(dot2 + 1);
  const std::vector<std::string> bad = {
      h + "." + p,                                                     // two parts
      h + "." + p + "." + s + ".",                                     // four
      h + "." + p + "." + s + "." + s,                                 //
      h + "=." + p + "." + s,                                          // padding
      h + "." + p + "==." + s,                                         //
      h + "." + p + "." + s + "=",                                     //
      h + "+." + p + "." + s,                                          // characters of base64, not base64url
      h + "." + p + "/" + "." + s,                                     //
      h + " ." + p + "." + s,                                          //
      h + "." + p + "." + s.substr(1) + "!",                           //
      "." + p + "." + s,                                               // empty parts
      h + ".." + s,                                                    //
      "..",                                                            //
      h + "." + p + "." + s + std::string(max_jwt_size, 'A'),          // too long
      h + std::string(4 - h.size() % 4 + 1, 'A') + "." + p + "." + s,  // a length of 4k+1
      h + "A." + p + "." + s,  // "}" and a NUL: nlohmann would stop reading at the NUL
  };
  for (const auto& token : bad) {
    INFO(token);
    CHECK(check(token).failure == jwt_failure::malformed);
  }
  CHECK(check("").failure == jwt_failure::missing);
  CHECK(label(jwt_failure::missing) == "missing");
}

TEST_CASE("jwt: a header or payload must be one JSON object naming each member once", "[jwt]") {
  using namespace std::string_literals;  // "..."s keeps a NUL
  for (const auto& payload : {"{\"a\":1}\0"s, "{\"a\":1}\0junk"s, "{\"a\":\"\0\"}"s, "\0"s}) {
    CHECK(failure_of(payload) == jwt_failure::malformed);
  }
  for (const auto* payload :
       {"[]", "\"x\"", "1", "null", "{", "{\"a\":1} x", "", "{\"a\":\"\xff\"}", R"({"sub":"a","sub":"b"})",
        R"({"sub":"a","o":{"k":1,"k":2}})", R"({"a":[{"x":1,"y":2,"x":3}]})",
        R"({"a":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]})"}) {
    INFO(payload);
    CHECK(failure_of(payload) == jwt_failure::malformed);
  }
  // The same names in different objects are not repeats; nesting up to 16 is fine.
  CHECK(failure_of(R"({"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]})") == jwt_failure::none);
  CHECK(failure_of(R"({"a":[[[[[[[[[[[[[[1]]]]]]]]]]]]]]})") == jwt_failure::none);
  const auto header_refused = [](std::string_view header_json) {
    return check(signed_token(R"({"sub":"a"})", header_json)).failure;
  };
  CHECK(header_refused(R"({"alg":"EdDSA","kid":"ed-1","alg":"EdDSA"})") == jwt_failure::malformed);
  CHECK(header_refused(R"({"alg":"EdDSA","kid":"x","kid":"ed-1"})") == jwt_failure::malformed);
  CHECK(header_refused(R"(["EdDSA"])") == jwt_failure::malformed);
  CHECK(header_refused(R"({"alg":"EdDSA","kid":"ed-1","crit":["exp"]})") == jwt_failure::malformed);
  CHECK(header_refused(R"({"kid":"ed-1"})") == jwt_failure::malformed);
  CHECK(header_refused(R"({"alg":["EdDSA"],"kid":"ed-1"})") == jwt_failure::malformed);
  CHECK(header_refused(R"({"alg":"EdDSA","kid":7})") == jwt_failure::malformed);
  CHECK(header_refused(R"({"alg":"EdDSA","kid":"ed-1","typ":"JWT","x":{}})") == jwt_failure::none);
  CHECK(check(signed_token(R"({"sub":"a","sub":"b"})")).description == "payload repeats a member");
}

TEST_CASE("jwt: exp and nbf hold with the leeway up to the second", "[jwt]") {
  jwt_rules rules;
  rules.leeway = std::chrono::seconds(30);
  const std::string exp = R"({"exp":1700000000})";
  CHECK(failure_of(exp, rules, 1700000030) == jwt_failure::none);
  CHECK(failure_of(exp, rules, 1700000031) == jwt_failure::expired);
  CHECK(failure_of(exp, {}, 1700000000) == jwt_failure::none);
  CHECK(failure_of(exp, {}, 1700000001) == jwt_failure::expired);
  CHECK(check(signed_token(exp), rules, 1700000031).description == "token expired");
  const std::string nbf = R"({"nbf":1700000000})";
  CHECK(failure_of(nbf, rules, 1699999970) == jwt_failure::none);
  CHECK(failure_of(nbf, rules, 1699999969) == jwt_failure::not_yet_valid);
  CHECK(failure_of(nbf, {}, 1699999999) == jwt_failure::not_yet_valid);
  // A fraction: exp 100.5 holds at 100 and not at 101; nbf 100.5 holds at 101, not at 100.
  CHECK(failure_of(R"({"exp":100.5})", {}, 100) == jwt_failure::none);
  CHECK(failure_of(R"({"exp":100.5})", {}, 101) == jwt_failure::expired);
  CHECK(failure_of(R"({"nbf":100.5})", {}, 100) == jwt_failure::not_yet_valid);
  CHECK(failure_of(R"({"nbf":100.5})", {}, 101) == jwt_failure::none);
  // Not numbers; extremes saturate rather than wrap.
  CHECK(failure_of(R"({"exp":"1700000600"})") == jwt_failure::malformed);
  CHECK(failure_of(R"({"exp":null})") == jwt_failure::malformed);
  CHECK(failure_of(R"({"nbf":"0"})") == jwt_failure::malformed);
  CHECK(failure_of(R"({"exp":18446744073709551615})") == jwt_failure::none);
  CHECK(failure_of(R"({"exp":1e300})") == jwt_failure::none);
  CHECK(failure_of(R"({"exp":-1e300})") == jwt_failure::expired);
  rules.leeway = std::chrono::seconds(std::numeric_limits<std::int64_t>::max());
  CHECK(failure_of(R"({"exp":9223372036854775807,"nbf":1})", rules) == jwt_failure::none);
  // Without exp the token does not expire; the verdict says so with 0.
  const auto verdict = check(signed_token(R"({"sub":"a","nbf":1699990000})"));
  CHECK(verdict.failure == jwt_failure::none);
  CHECK(verdict.expires == 0);
  CHECK(verdict.not_before == 1699990000);
}

TEST_CASE("jwt: issuer and audience must be among the accepted ones", "[jwt]") {
  jwt_rules rules;
  rules.issuers = {"https://idp.example", "https://other.example"};
  CHECK(failure_of(R"({"iss":"https://other.example"})", rules) == jwt_failure::none);
  CHECK(failure_of(R"({"iss":"https://evil.example"})", rules) == jwt_failure::issuer);
  CHECK(failure_of(R"({"iss":["https://idp.example"]})", rules) == jwt_failure::issuer);
  CHECK(failure_of(R"({"sub":"a"})", rules) == jwt_failure::issuer);
  CHECK(failure_of(R"({"iss":"https://evil.example"})") == jwt_failure::none);  // not checked
  rules = {};
  rules.audiences = {"api", "admin"};
  CHECK(failure_of(R"({"aud":"api"})", rules) == jwt_failure::none);
  CHECK(failure_of(R"({"aud":["web","admin"]})", rules) == jwt_failure::none);
  CHECK(failure_of(R"({"aud":"web"})", rules) == jwt_failure::audience);
  CHECK(failure_of(R"({"aud":["web","apis"]})", rules) == jwt_failure::audience);
  CHECK(failure_of(R"({"aud":[]})", rules) == jwt_failure::audience);
  CHECK(failure_of(R"({"aud":[["api"]]})", rules) == jwt_failure::audience);
  CHECK(failure_of(R"({"sub":"a"})", rules) == jwt_failure::audience);
  CHECK(check(signed_token(R"({"aud":"web"})"), rules).description == "audience not accepted");
}

TEST_CASE("jwt: required claims and required claim values", "[jwt]") {
  jwt_rules rules;
  rules.required_claims = {"sub", "tenant"};
  CHECK(failure_of(R"({"sub":"a","tenant":0})", rules) == jwt_failure::none);
  CHECK(failure_of(R"({"sub":"a"})", rules) == jwt_failure::missing_claim);
  CHECK(failure_of(R"({"sub":"a","tenant":null})", rules) == jwt_failure::missing_claim);
  CHECK(check(signed_token(R"({"tenant":"t"})"), rules).description == "missing claim 'sub'");
  rules = {};
  rules.claim_values = {{"scope", {"b"}}};
  CHECK(failure_of(R"({"scope":"a b c"})", rules) == jwt_failure::none);
  rules.claim_values = {{"scope", {"b", "d"}}};
  CHECK(failure_of(R"({"scope":"a b c"})", rules) == jwt_failure::forbidden);
  CHECK(check(signed_token(R"({"scope":"a b c"})"), rules).description ==
        "claim 'scope' lacks a required value");
  rules.claim_values = {{"scope", {"a b"}}};  // a value is one word, never a run of them
  CHECK(failure_of(R"({"scope":"a b c"})", rules) == jwt_failure::forbidden);
  rules.claim_values = {{"roles", {"admin", "ops"}}};
  CHECK(failure_of(R"({"roles":["ops","dev","admin"]})", rules) == jwt_failure::none);
  CHECK(failure_of(R"({"roles":["ops","dev"]})", rules) == jwt_failure::forbidden);
  CHECK(failure_of(R"({"roles":"admin"})", rules) == jwt_failure::forbidden);  // one word, "ops" missing
  CHECK(failure_of(R"({"roles":[["admin","ops"]]})", rules) == jwt_failure::forbidden);
  CHECK(failure_of(R"({"sub":"a"})", rules) == jwt_failure::forbidden);
  CHECK(failure_of(R"({"roles":{"admin":true,"ops":true}})", rules) == jwt_failure::forbidden);
  CHECK(label(jwt_failure::forbidden) == "forbidden");
}

TEST_CASE("jwt: the wanted claims come back as text", "[jwt]") {
  const std::vector<std::string> wanted = {
      "sub", "n", "f", "b", "absent", "o", "arr", "z", "https://x.example/t", "0"};
  const auto verdict = check(signed_token(R"({"sub":"caf\u00e9 \"q\"","n":42,"f":1.50,"b":true,"o":{"a":1},)"
                                          R"("arr":[1],"z":null,"https://x.example/t":"t1","0":false})"),
                             {}, now, wanted);
  REQUIRE(verdict.failure == jwt_failure::none);
  CHECK(verdict.claims ==
        std::vector<std::string>{"caf\xC3\xA9 \"q\"", "42", "1.50", "true", "", "", "", "", "t1", "false"});
  // Refused tokens hand back nothing.
  CHECK(check(signed_token(R"({"sub":"a","exp":1})"), {}, now, wanted).claims.empty());
}

TEST_CASE("jwt: descriptions never repeat the token's bytes or claim values", "[jwt]") {
  jwt_rules rules;
  rules.issuers = {"good-issuer"};
  rules.audiences = {"good-aud"};
  rules.required_claims = {"sub"};
  rules.claim_values = {{"scope", {"read"}}};
  const std::string secret = "SECRET-VALUE";
  const std::vector<std::string> tokens = {
      signed_token(R"({"iss":"SECRET-VALUE"})"),
      signed_token(R"({"iss":"good-issuer","aud":"SECRET-VALUE"})"),
      signed_token(R"({"iss":"good-issuer","aud":"good-aud","scope":"SECRET-VALUE"})"),
      signed_token(R"({"iss":"good-issuer","aud":"good-aud","SECRET-VALUE":1})"),
      signed_token(R"({"exp":"SECRET-VALUE"})"),
      signed_token(R"({"sub":"a"})", R"({"alg":"SECRET-VALUE"})"),
      signed_token(R"({"sub":"a"})", R"({"alg":"EdDSA","kid":"SECRET-VALUE"})"),
      "SECRET-VALUE.a.b",
      "SECRET-VALUE"};
  for (const auto& token : tokens) {
    const auto verdict = check(token, rules);
    INFO(verdict.description);
    CHECK(verdict.failure != jwt_failure::none);
    CHECK(verdict.description.find(secret) == std::string::npos);
    CHECK(verdict.description.find(token.substr(0, 8)) == std::string::npos);
    CHECK_FALSE(verdict.description.empty());
  }
  for (std::size_t i = 0; i < jwt_failure_count; ++i) CHECK_FALSE(label(static_cast<jwt_failure>(i)).empty());
}
