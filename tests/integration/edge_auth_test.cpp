// A route's front door against the real gateway and mock: JWTs verified against a JWKS file (alg
// confusion, time window, issuer, audience, claims, key rotation), API keys, claims forwarded to
// downstreams in place of what the client sent, and local rate limits with exact counts. The mock echoes
// the fields it received, so an answer shows what reached the downstream.

#include "tests/integration/metric_scrape.hpp"
#include "tests/support/jwt_signer.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/temp_dir.hpp"

#include <openssl/evp.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

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

// Whether the gateway's links to Redis answer, on every I/O thread: 8 requests in a row of its /api/probe
// route (a redis limit that never refuses), each on a new connection (the connections spread over the
// threads), decided by Redis rather than the local fallback, within 10 s.
bool redis_decides(gateway_process& gw) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  const label_map probe{{"http_route", "/api/probe"}};
  int in_a_row = 0;
  while (in_a_row < 8 && std::chrono::steady_clock::now() < deadline) {
    const auto before = metric(gw, "gateway_rate_limit_fallbacks_total", probe);
    http_get(gw.port(), "/api/probe");
    if (metric(gw, "gateway_rate_limit_fallbacks_total", probe) == before) {
      ++in_a_row;
    } else {
      in_a_row = 0;
      std::this_thread::sleep_for(50ms);
    }
  }
  return in_a_row == 8;
}

const std::string probe_route =
    "  - path: /api/probe\n    response: object\n    rate_limit:\n"
    "      - {key: global, rate: 1000/s, backend: redis}\n"
    "    calls:\n      - {name: a, downstream: mock, path: /a}\n";

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
      "', timeout: 500ms, connect_timeout: 200ms, expected_replicas: 2}\n"
      "routes:\n  - path: /api/shared\n    response: object\n    rate_limit:\n"
      "      - {key: global, rate: 1/h, burst: 10, backend: redis}\n"
      "    calls:\n      - {name: a, downstream: mock, path: /a}\n" +
      probe_route;
  gateway_process first(config);
  gateway_process second(config);
  REQUIRE(redis_decides(first));  // a request before a link's first connect is decided locally
  REQUIRE(redis_decides(second));
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

  // Killed under load: four clients keep asking; every answer comes, none waits beyond the bound. (The
  // store's timeout is generous here: on a busy test machine a slower reply would be decided by the local
  // fallback, which the exact counts above must not see.)
  std::atomic<int> answered{0};
  std::atomic<int> slow{0};
  std::atomic<bool> go_on{true};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&] {
      http_connection conn(first.port());
      while (go_on.load()) {
        const auto started = std::chrono::steady_clock::now();
        const auto r = conn.get("/api/shared");
        if (std::chrono::steady_clock::now() - started >= 500ms + 150ms) ++slow;
        if (r.status == 200 || r.status == 429) ++answered;
      }
    });
  }
  std::this_thread::sleep_for(300ms);
  redis.kill();
  const auto answered_at_kill = answered.load();
  std::this_thread::sleep_for(1s);
  go_on = false;
  for (auto& t : clients) t.join();
  CHECK(answered.load() > answered_at_kill + 20);
  CHECK(slow.load() == 0);
  // Every decision since the kill was the local fallback's (rate / expected_replicas: 5 admitted, at most).
  const auto fallbacks = metric(first, "gateway_rate_limit_fallbacks_total", {{"http_route", "/api/shared"}});
  CHECK(fallbacks >= 20);
  CHECK(metric(first, "gateway_rate_limited_total", {{"http_route", "/api/shared"}, {"key", "global"}}) >=
        20 + fallbacks - 5);

  redis.start();  // empty again: the links reconnect, and Redis decides again
  CHECK(redis_decides(first));
  CHECK(redis_decides(second));
  CHECK(http_get(first.port(), "/api/shared").status == 200);  // a full bucket again, shared
}

TEST_CASE("a Redis store with a password, over TLS: the limit is shared, a wrong password falls back locally",
          "[edge][redis]") {
  redis_server redis(redis_server_options{"s3cret/pw", true});
  mock_downstream mock;
  const auto config = [&](const std::string& password) {
    return "server:\n  listen: 127.0.0.1:0\n  threads: 2\ndownstreams:\n  mock:\n    url: " + mock.url() +
           "\nredis:\n  url: 'rediss://:" + password + "@127.0.0.1:" + std::to_string(redis.port()) +
           "'\n  timeout: 500ms\n  expected_replicas: 2\n  tls: {ca_file: " + redis.ca_file() +
           ", server_name: localhost}\nroutes:\n  - path: /api/shared\n    response: object\n    "
           "rate_limit:\n"
           "      - {key: global, rate: 1/h, burst: 4, backend: redis}\n"
           "    calls:\n      - {name: a, downstream: mock, path: /a}\n" +
           probe_route;
  };
  {
    gateway_process gw(config("s3cret%2Fpw"));
    REQUIRE(redis_decides(gw));
    int admitted = 0;
    for (int i = 0; i < 10; ++i) admitted += http_get(gw.port(), "/api/shared").status == 200;
    CHECK(admitted == 4);
    CHECK(metric(gw, "gateway_rate_limit_fallbacks_total", {{"http_route", "/api/shared"}}) == 0);
  }
  gateway_process wrong(config("nope"));
  CHECK_FALSE(redis_decides(wrong));
  int admitted = 0;
  for (int i = 0; i < 10; ++i) admitted += http_get(wrong.port(), "/api/shared").status == 200;
  CHECK(admitted == 2);  // the local bucket: burst 4 / 2 replicas
  CHECK(metric(wrong, "gateway_rate_limit_fallbacks_total", {{"http_route", "/api/shared"}}) == 10);
}

TEST_CASE("a reload keeps a limit's spent buckets when the limit is unchanged, and starts a changed one full",
          "[edge][rate_limit]") {
  mock_downstream mock;
  const auto config = [&](const std::string& deadline, int burst) {
    return "server:\n  listen: 127.0.0.1:0\n  threads: 2\n  watch_config: false\ndownstreams:\n  mock:\n    "
           "url: " +
           mock.url() + "\nroutes:\n  - path: /api/limited\n    response: object\n    deadline: " + deadline +
           "\n    rate_limit:\n      - {key: client, rate: 1/h, burst: " + std::to_string(burst) +
           "}\n    calls:\n      - {name: a, downstream: mock, path: /a}\n";
  };
  gateway_process gw(config("800ms", 3));
  for (int i = 0; i < 3; ++i) CHECK(http_get(gw.port(), "/api/limited").status == 200);
  CHECK(http_get(gw.port(), "/api/limited").status == 429);
  const auto reload = [&](const std::string& yaml) {
    std::ofstream(gw.config_path()) << yaml;
    http_connection admin(gw.admin_port(), 10000ms);
    return admin.request("POST", "/reload").json()["applied"] == true;
  };
  REQUIRE(reload(config("900ms", 3)));  // another setting of the route changes; the limit does not
  CHECK(http_get(gw.port(), "/api/limited").status == 429);
  REQUIRE(reload(config("900ms", 4)));  // the limit changes: its buckets start full
  for (int i = 0; i < 4; ++i) CHECK(http_get(gw.port(), "/api/limited").status == 200);
  CHECK(http_get(gw.port(), "/api/limited").status == 429);
}

TEST_CASE("a gateway with a Redis store exits 0 on SIGTERM: the store's links do not keep it running",
          "[edge][redis][drain]") {
  redis_server redis;
  mock_downstream mock;
  gateway_process gw("server:\n  listen: 127.0.0.1:0\n  threads: 2\ndownstreams:\n  mock:\n    url: " +
                     mock.url() + "\nredis: {url: '" + redis.url() +
                     "', timeout: 50ms}\nshutdown:\n  drain_delay: 0s\n  timeout: 1s\n"
                     "routes:\n  - path: /api/shared\n    response: object\n    rate_limit:\n"
                     "      - {key: global, rate: 1000/s, backend: redis}\n"
                     "    calls:\n      - {name: a, downstream: mock, path: /a}\n");
  REQUIRE(http_get(gw.port(), "/api/shared").status == 200);
  const auto status = gw.process().stop(SIGTERM, 5s);
  REQUIRE(status);
  CHECK(status->exited);
  CHECK(status->code == 0);
}
