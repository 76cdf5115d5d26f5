// The per-thread cache of verified tokens: a hit gives back the claims, only for the same key set, only
// while the token's time window still holds; it keeps accepted tokens only, and at most its capacity.

#include "gateway/auth/verified_tokens.hpp"
#include "tests/support/jwt_signer.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace gateway;
using jwt_test::keys;

namespace {

constexpr std::int64_t now = 1'700'000'000;

std::shared_ptr<const jwk_set> ring_set() {
  std::string error;
  auto set = jwk_set::parse(keys().jwks(), error);
  REQUIRE(set);
  return set;
}

std::string token(std::string_view payload) {
  return jwt_test::token(keys().ed.get(), "EdDSA", R"({"alg":"EdDSA","kid":"ed-1"})", payload);
}

const std::vector<std::string> wanted = {"sub"};

}  // namespace

TEST_CASE("verified_tokens: a hit gives back the verdict's claims, for the same key set only", "[jwt]") {
  const auto set = ring_set();
  verified_tokens cache(16, std::chrono::seconds(0));
  const auto t = token(R"({"sub":"user-7","exp":1700000600})");
  CHECK(cache.find(t, *set, now) == nullptr);
  const auto verdict = verify_jwt(t, *set, {}, now, wanted);
  REQUIRE(verdict.failure == jwt_failure::none);
  cache.insert(t, *set, verdict);
  const auto* hit = cache.find(t, *set, now);
  REQUIRE(hit);
  CHECK(hit->claims == std::vector<std::string>{"user-7"});
  CHECK(hit->expires == 1700000600);
  // The same JWKS parsed again is a new set: its tokens are verified against it first.
  const auto reloaded = ring_set();
  CHECK(cache.find(t, *reloaded, now) == nullptr);
  CHECK(cache.find(t, *set, now) != nullptr);
  // Another token, or the token with a byte more or less, is not this one.
  CHECK(cache.find(t + "A", *set, now) == nullptr);
  CHECK(cache.find(t.substr(0, t.size() - 1), *set, now) == nullptr);
}

TEST_CASE("verified_tokens: a hit checks exp and nbf again with the leeway", "[jwt]") {
  const auto set = ring_set();
  jwt_rules rules;
  rules.leeway = std::chrono::seconds(5);
  verified_tokens cache(16, rules.leeway);
  const auto t = token(R"({"sub":"a","exp":1700000010})");
  cache.insert(t, *set, verify_jwt(t, *set, rules, now, wanted));
  CHECK(cache.find(t, *set, 1700000015) != nullptr);
  CHECK(cache.find(t, *set, 1700000016) == nullptr);
  // Dropped: not found even at a time it would have held, and verifying again says why.
  CHECK(cache.find(t, *set, now) == nullptr);
  CHECK(verify_jwt(t, *set, rules, 1700000016).failure == jwt_failure::expired);

  const auto early = token(R"({"sub":"a","nbf":1700000100})");
  const auto verdict = verify_jwt(early, *set, rules, 1700000095, wanted);
  REQUIRE(verdict.failure == jwt_failure::none);
  cache.insert(early, *set, verdict);
  CHECK(cache.find(early, *set, 1700000095) != nullptr);
  CHECK(cache.find(early, *set, 1700000094) == nullptr);

  const auto forever = token(R"({"sub":"a"})");
  cache.insert(forever, *set, verify_jwt(forever, *set, rules, now, wanted));
  CHECK(cache.find(forever, *set, std::numeric_limits<std::int64_t>::max()) != nullptr);
  CHECK(cache.find(forever, *set, std::numeric_limits<std::int64_t>::min()) != nullptr);
}

TEST_CASE("verified_tokens: refused tokens are never kept", "[jwt]") {
  const auto set = ring_set();
  verified_tokens cache(16, std::chrono::seconds(0));
  const auto expired = token(R"({"sub":"a","exp":1})");
  const auto verdict = verify_jwt(expired, *set, {}, now, wanted);
  REQUIRE(verdict.failure == jwt_failure::expired);
  cache.insert(expired, *set, verdict);
  CHECK(cache.find(expired, *set, 0) == nullptr);
}

TEST_CASE("verified_tokens: the table holds at most its capacity, the newest entry of a slot wins", "[jwt]") {
  const auto set = ring_set();
  verified_tokens one(1, std::chrono::seconds(0));
  CHECK(one.capacity() == 1);
  const auto a = token(R"({"sub":"a"})"), b = token(R"({"sub":"b"})");
  one.insert(a, *set, verify_jwt(a, *set, {}, now, wanted));
  one.insert(b, *set, verify_jwt(b, *set, {}, now, wanted));
  CHECK(one.find(a, *set, now) == nullptr);
  REQUIRE(one.find(b, *set, now) != nullptr);
  CHECK(one.find(b, *set, now)->claims == std::vector<std::string>{"b"});

  verified_tokens eight(8, std::chrono::seconds(0));
  std::vector<std::string> tokens;
  for (int i = 0; i < 64; ++i) {
    tokens.push_back(token(R"({"sub":"u)" + std::to_string(i) + R"("})"));
    eight.insert(tokens.back(), *set, verify_jwt(tokens.back(), *set, {}, now, wanted));
    CHECK(eight.find(tokens.back(), *set, now) != nullptr);  // the newest is always there
  }
  std::size_t hits = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (const auto* hit = eight.find(tokens[i], *set, now)) {
      ++hits;
      CHECK(hit->claims == std::vector<std::string>{"u" + std::to_string(i)});
    }
  }
  CHECK(hits >= 1);
  CHECK(hits <= 8);
}
