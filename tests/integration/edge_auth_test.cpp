// A route's front door against the real gateway and mock: JWTs verified against a JWKS file (alg
// confusion, time window, issuer, audience, claims, key rotation), API keys, claims forwarded to
// downstreams in place of what the client sent, and local rate limits with exact counts. The mock echoes
// the fields it received, so an answer shows what reached the downstream.

#include "tests/integration/metric_scrape.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/jwt_signer.hpp"

#include <openssl/evp.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path + ".tmp") << text;
  std::rename((path + ".tmp").c_str(), path.c_str());
}

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A token signed by the ring's key for `alg` with kid `kid`, claims `claims` (JSON members, no braces).
std::string signed_token(std::string_view alg, std::string_view kid, const std::string& claims) {
  const auto& k = jwt_test::keys();
  EVP_PKEY* key = alg.starts_with("RS") || alg.starts_with("PS") ? k.rsa.get()
                  : alg == "ES256"                               ? k.ec256.get()
                  : alg == "ES384"                               ? k.ec384.get()
                                                                 : k.ed.get();
  return jwt_test::token(key, alg,
                         R"({"alg":")" + std::string(alg) + R"(","kid":")" + std::string(kid) + "\"}",
                         "{" + claims + "}");
}

std::string good_claims(std::int64_t exp_offset = 300) {
  return R"("iss":"https://idp.example","aud":"orders","sub":"user-1","tenant":"acme","scope":"orders:read profile","exp":)" +
         std::to_string(now_s() + exp_offset);
}

header_list bearer(const std::string& token) {
  return {{"Authorization", "Bearer " + token}};
}

struct jwt_fixture {
  mock_downstream mock;
  temp_dir dir;
  std::string jwks_path = dir.path() + "/jwks.json";
  std::unique_ptr<gateway_process> gw;

  explicit jwt_fixture(const std::string& extra_jwt = "", const std::string& extra_route = "") {
    // The downstream's answer echoes the identity fields it received.
    mock.set_body("whoami", R"({"user":"{header.x-user-id}","tenant":"{header.x-tenant}"})");
    mock.set_body("orders/*", R"({"path":"{path}"})");
    write_file(jwks_path, jwt_test::keys().jwks());
    gw = std::make_unique<gateway_process>(
        "server:\n  listen: 127.0.0.1:0\n  threads: 2\ndownstreams:\n  mock:\n    url: " + mock.url() +
        "\nroutes:\n"
        "  - path: /api/me\n    response: object\n    auth:\n      jwt:\n        jwks_file: " +
        jwks_path +
        "\n        issuers: [https://idp.example]\n        audiences: [orders, billing]\n        leeway: 5s\n"
        "        claim_values: {scope: orders:read}\n"
        "        forward_claims: {sub: X-User-Id, tenant: X-Tenant}\n" +
        extra_jwt +
        "    calls:\n      - {name: me, downstream: mock, path: /whoami}\n"
        "      - {name: orders, downstream: mock, path: '/orders/{jwt.sub}'}\n" +
        extra_route);
  }
};

}  // namespace

TEST_CASE("a route with auth.jwt answers a good token and refuses what is not one, calling no downstream",
          "[edge][jwt]") {
  jwt_fixture f;
  for (const auto* alg : {"RS256", "PS256", "ES256", "ES384", "EdDSA"}) {
    const std::string kid = std::string_view(alg).starts_with("RS") || std::string_view(alg).starts_with("PS")
                                ? "rsa-1"
                            : std::string_view(alg) == "ES256" ? "ec256-1"
                            : std::string_view(alg) == "ES384" ? "ec384-1"
                                                               : "ed-1";
    const auto r = http_get(f.gw->port(), "/api/me", bearer(signed_token(alg, kid, good_claims())));
    INFO(alg << ": " << r.body);
    CHECK(r.status == 200);
    CHECK(r.json()["me"]["user"] == "user-1");
    CHECK(r.json()["orders"]["path"] == "orders/user-1");
  }
  const auto before = f.mock.stats();
  const auto calls_before = f.mock.path_counter(before, "whoami", "requests");

  SECTION("no token: 401 with a bare challenge") {
    const auto r = http_get(f.gw->port(), "/api/me");
    CHECK(r.status == 401);
    CHECK(r.header("www-authenticate") == "Bearer realm=\"gateway\"");
  }
  SECTION("alg none is refused") {
    const auto none = jwt_test::b64url(R"({"alg":"none","kid":"rsa-1"})") + "." +
                      jwt_test::b64url("{" + good_claims() + "}") + ".";
    const auto r = http_get(f.gw->port(), "/api/me", bearer(none));
    CHECK(r.status == 401);
    CHECK(r.header("www-authenticate").value_or("").find("error=\"invalid_token\"") != std::string::npos);
  }
  SECTION("HS256 signed with the RSA public key (algorithm confusion) is refused") {
    const auto input = jwt_test::signing_input(R"({"alg":"HS256","kid":"rsa-1"})", "{" + good_claims() + "}");
    const auto forged =
        input + "." +
        jwt_test::b64url(jwt_test::hmac_sha256(jwt_test::public_pem(jwt_test::keys().rsa.get()), input));
    CHECK(http_get(f.gw->port(), "/api/me", bearer(forged)).status == 401);
  }
  SECTION("expired, beyond the leeway") {
    CHECK(http_get(f.gw->port(), "/api/me", bearer(signed_token("ES256", "ec256-1", good_claims(-10))))
              .status == 401);
  }
  SECTION("expired but within the leeway") {
    CHECK(
        http_get(f.gw->port(), "/api/me", bearer(signed_token("ES256", "ec256-1", good_claims(-2)))).status ==
        200);
  }
  SECTION("not yet valid") {
    const auto claims = good_claims() + ",\"nbf\":" + std::to_string(now_s() + 60);
    CHECK(http_get(f.gw->port(), "/api/me", bearer(signed_token("ES256", "ec256-1", claims))).status == 401);
  }
  SECTION("wrong issuer") {
    auto claims = good_claims();
    claims.replace(claims.find("idp.example"), 11, "evil.example");
    const auto r = http_get(f.gw->port(), "/api/me", bearer(signed_token("ES256", "ec256-1", claims)));
    CHECK(r.status == 401);
  }
  SECTION("wrong audience") {
    auto claims = good_claims();
    claims.replace(claims.find("\"orders\""), 8, "\"admin\"");
    CHECK(http_get(f.gw->port(), "/api/me", bearer(signed_token("ES256", "ec256-1", claims))).status == 401);
  }
  SECTION("a valid token without the required scope: 403") {
    auto claims = good_claims();
    claims.replace(claims.find("orders:read"), 11, "orders:list");
    const auto r = http_get(f.gw->port(), "/api/me", bearer(signed_token("ES256", "ec256-1", claims)));
    CHECK(r.status == 403);
    CHECK(r.header("www-authenticate").value_or("").find("insufficient_scope") != std::string::npos);
  }
  SECTION("a token signed by a key not in the set") {
    const auto other = jwt_test::token(jwt_test::keys().ec256_other.get(), "ES256",
                                       R"({"alg":"ES256","kid":"ec256-1"})", "{" + good_claims() + "}");
    CHECK(http_get(f.gw->port(), "/api/me", bearer(other)).status == 401);
  }
  SECTION("an unknown kid") {
    CHECK(http_get(f.gw->port(), "/api/me", bearer(signed_token("ES256", "nobody", good_claims()))).status ==
          401);
  }
  // None of the refusals reached the downstream.
  const auto after = f.mock.stats();
  CHECK(f.mock.path_counter(after, "whoami", "requests") <= calls_before + 1);
}

TEST_CASE("a client's own identity fields never reach the downstream: the token's claims do", "[edge][jwt]") {
  jwt_fixture f;
  const auto token = signed_token("RS256", "rsa-1", good_claims());
  auto headers = bearer(token);
  headers.push_back({"X-User-Id", "admin"});
  headers.push_back({"X-Tenant", "other-tenant"});
  const auto r = http_get(f.gw->port(), "/api/me?jwt.sub=admin", headers);
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK(r.json()["me"]["user"] == "user-1");
  CHECK(r.json()["me"]["tenant"] == "acme");
  CHECK(r.json()["orders"]["path"] == "orders/user-1");
}

TEST_CASE("a rotated JWKS file: the new key is taken up, a key that left the set no longer verifies",
          "[edge][jwt]") {
  jwt_fixture f;
  const auto& k = jwt_test::keys();
  const auto old_token = signed_token("ES256", "ec256-1", good_claims());
  REQUIRE(http_get(f.gw->port(), "/api/me", bearer(old_token)).status == 200);
  const auto new_token = jwt_test::token(k.ec256_other.get(), "ES256", R"({"alg":"ES256","kid":"ec256-2"})",
                                         "{" + good_claims() + "}");
  CHECK(http_get(f.gw->port(), "/api/me", bearer(new_token)).status == 401);

  // Both keys: both tokens verify.
  write_file(f.jwks_path, R"({"keys":[)" + jwt_test::jwk(k.ec256.get(), "ec256-1") + "," +
                              jwt_test::jwk(k.ec256_other.get(), "ec256-2") + "]}");
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (http_get(f.gw->port(), "/api/me", bearer(new_token)).status != 200 &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(100ms);
  CHECK(http_get(f.gw->port(), "/api/me", bearer(new_token)).status == 200);
  CHECK(http_get(f.gw->port(), "/api/me", bearer(old_token)).status == 200);

  // The old key leaves: its token (verified and cached before) is refused.
  write_file(f.jwks_path, R"({"keys":[)" + jwt_test::jwk(k.ec256_other.get(), "ec256-2") + "]}");
  const auto until2 = std::chrono::steady_clock::now() + 10s;
  while (http_get(f.gw->port(), "/api/me", bearer(old_token)).status != 401 &&
         std::chrono::steady_clock::now() < until2)
    std::this_thread::sleep_for(100ms);
  CHECK(http_get(f.gw->port(), "/api/me", bearer(old_token)).status == 401);
  CHECK(http_get(f.gw->port(), "/api/me", bearer(new_token)).status == 200);

  // A broken file keeps the last good set.
  write_file(f.jwks_path, "{not json");
  std::this_thread::sleep_for(3s);
  CHECK(http_get(f.gw->port(), "/api/me", bearer(new_token)).status == 200);
}

TEST_CASE("API keys: a listed key is admitted and its name forwarded, any other refused", "[edge][api_key]") {
  mock_downstream mock;
  mock.set_body("whoami", R"({"client":"{header.x-client}","key":"{header.x-api-key}"})");
  temp_dir dir;
  const auto keys = dir.path() + "/keys.txt";
  const auto digest = [](const std::string& key) {
    std::string hex;
    unsigned char d[32];
    unsigned int size = 0;
    EVP_Digest(key.data(), key.size(), d, &size, EVP_sha256(), nullptr);
    for (const auto b : d) {
      static constexpr char digits[] = "0123456789abcdef";
      hex += digits[b >> 4];
      hex += digits[b & 15];
    }
    return hex;
  };
  write_file(keys, "# name sha256\nmobile-app " + digest("k-mobile-123") + "\npartner " +
                       digest("k-partner-9") + "\n");
  gateway_process gw(
      "server:\n  listen: 127.0.0.1:0\n  threads: 2\ndownstreams:\n  mock:\n    url: " + mock.url() +
      "\nroutes:\n  - path: /api/me\n    response: object\n    auth:\n      api_key: {header: X-Api-Key, "
      "keys_file: " +
      keys +
      ", forward_as: X-Client}\n    headers: {forward: [X-Api-Key]}\n"
      "    calls:\n      - {name: me, downstream: mock, path: /whoami}\n");
  const auto r = http_get(gw.port(), "/api/me", {{"X-Api-Key", "k-mobile-123"}, {"X-Client", "partner"}});
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK(r.json()["me"]["client"] == "mobile-app");
  CHECK(http_get(gw.port(), "/api/me", {{"X-Api-Key", "k-mobile-12"}}).status == 401);
  CHECK(http_get(gw.port(), "/api/me").status == 401);
}

TEST_CASE(
    "a local rate limit admits exactly its burst, then answers 429 with Retry-After and RateLimit fields",
    "[edge][rate_limit]") {
  mock_downstream mock;
  gateway_process gw(
      "server:\n  listen: 127.0.0.1:0\n  threads: 2\ndownstreams:\n  mock:\n    url: " + mock.url() +
      "\nroutes:\n  - path: /api/limited\n    response: object\n    rate_limit:\n"
      "      - {name: per-tenant, key: 'header:X-Tenant', rate: 1/h, burst: 5}\n"
      "      - {name: everyone, key: global, rate: 1/h, burst: 8}\n"
      "    calls:\n      - {name: a, downstream: mock, path: /a}\n");
  const auto ask = [&](const std::string& tenant) {
    return http_get(gw.port(), "/api/limited", {{"X-Tenant", tenant}});
  };
  for (int i = 0; i < 5; ++i) {
    const auto r = ask("acme");
    REQUIRE(r.status == 200);
    CHECK(r.header("ratelimit-policy") == R"("per-tenant";q=1;w=3600, "everyone";q=1;w=3600)");
    CHECK(r.header("ratelimit").value_or("").find(";r=" + std::to_string(4 - i)) != std::string::npos);
  }
  const auto refused = ask("acme");
  CHECK(refused.status == 429);
  CHECK(refused.header("retry-after").has_value());
  CHECK(std::stoll(refused.header("retry-after").value_or("0")) > 600);
  CHECK(refused.header("ratelimit").value_or("").starts_with("\"per-tenant\";r=0"));
  // Another tenant has its own bucket, until the global one (8) is spent: 5 + 3.
  for (int i = 0; i < 3; ++i) CHECK(ask("globex").status == 200);
  const auto global = ask("globex");
  CHECK(global.status == 429);
  CHECK(global.header("ratelimit").value_or("").starts_with("\"everyone\";r=0"));
  const auto stats = mock.stats();
  CHECK(mock.path_counter(stats, "a", "requests") == 8);
  CHECK(metric(gw, "gateway_rate_limited_total", {{"http_route", "/api/limited"}, {"key", "header"}}) == 1);
  CHECK(metric(gw, "gateway_rate_limited_total", {{"http_route", "/api/limited"}, {"key", "global"}}) == 1);
}

TEST_CASE(
    "two gateways share one limit through Redis, each falls back locally while it is down, shared again "
    "after",
    "[edge][redis]") {
  redis_server redis;
  mock_downstream mock;
  const auto config =
      "server:\n  listen: 127.0.0.1:0\n  threads: 2\ndownstreams:\n  mock:\n    url: " + mock.url() +
      "\nredis: {url: '" + redis.url() +
      "', timeout: 50ms, connect_timeout: 200ms, expected_replicas: 2}\n"
      "routes:\n  - path: /api/shared\n    response: object\n    rate_limit:\n"
      "      - {key: global, rate: 1/h, burst: 10, backend: redis}\n"
      "    calls:\n      - {name: a, downstream: mock, path: /a}\n";
  gateway_process first(config);
  gateway_process second(config);
  int admitted = 0;
  int refused = 0;
  for (int i = 0; i < 30; ++i) {
    const auto r = http_get((i % 2 == 0 ? first : second).port(), "/api/shared");
    admitted += r.status == 200;
    refused += r.status == 429;
  }
  // Redis counts for both: together they admit the limit, exactly (one script per request, atomic).
  CHECK(admitted == 10);
  CHECK(refused == 20);

  redis.kill();
  int answered = 0;
  for (int i = 0; i < 20; ++i) {
    const auto started = std::chrono::steady_clock::now();
    const auto r = http_get(first.port(), "/api/shared");
    const auto took = std::chrono::steady_clock::now() - started;
    CHECK(took < 50ms + 150ms);
    answered += r.status == 200 || r.status == 429;
  }
  CHECK(answered == 20);
  // The local fallback bucket is rate / expected_replicas: 5 of the 20.
  CHECK(metric(first, "gateway_rate_limit_fallbacks_total", {{"http_route", "/api/shared"}}) == 20);
  CHECK(metric(first, "gateway_rate_limited_total", {{"http_route", "/api/shared"}, {"key", "global"}}) >=
        15 + 10);

  redis.start();  // empty again: the shared bucket is full
  const auto until = std::chrono::steady_clock::now() + 15s;
  double fallbacks = metric(first, "gateway_rate_limit_fallbacks_total", {{"http_route", "/api/shared"}});
  bool shared_again = false;
  while (!shared_again && std::chrono::steady_clock::now() < until) {
    http_get(first.port(), "/api/shared");
    const auto now = metric(first, "gateway_rate_limit_fallbacks_total", {{"http_route", "/api/shared"}});
    shared_again = now == fallbacks;
    fallbacks = now;
    if (!shared_again) std::this_thread::sleep_for(100ms);
  }
  CHECK(shared_again);
}
