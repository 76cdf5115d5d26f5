// The header policy against the real gateway and mock: client fields a route forwards and fixed ones
// reach the downstream, forwarded fields name the client (a client cannot pose as another address), and
// answers are never shared between clients whose forwarded fields differ.

#include "tests/support/http_client.hpp"
#include "tests/support/processes.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

using namespace test_support;

namespace {

const std::string recorded =
    "authorization,cookie,accept-language,x-api-key,x-forwarded-for,x-forwarded-proto,"
    "x-forwarded-host,forwarded,connection,x-secret";

std::string policy_config(const mock_downstream& mock, const std::string& server_extra = "",
                          const std::string& downstream_extra = "") {
  return "server:\n  listen: 127.0.0.1:0\n" + server_extra + "downstreams:\n  mock:\n    url: " + mock.url() +
         "\n" + downstream_extra + R"(routes:
  - path: /api/me
    response: object
    headers:
      forward: [Authorization, Cookie, Accept-Language, Connection-Id]
      set: {X-Api-Key: '${GATEWAY_TEST_API_KEY}'}
    calls:
      - {name: coupon, downstream: mock, path: '/coupon?sku=ME'}
      - name: pricing
        downstream: mock
        path: '/pricing?sku=ME'
        headers: {remove: [Cookie]}
)";
}

nlohmann::json last_headers(mock_downstream& mock, const std::string& path) {
  return mock.stats()["paths"][path]["last_headers"];
}

}  // namespace

TEST_CASE(
    "header policy: forwarded client fields and fixed ones reach the calls, X-Forwarded-* name the peer",
    "[headers]") {
  ::setenv("GATEWAY_TEST_API_KEY", "key-123", 1);
  mock_downstream mock({"--record-headers", recorded});
  gateway_process gw(policy_config(mock));
  const auto r = http_get(gw.port(), "/api/me",
                          {{"Authorization", "Bearer u1"},
                           {"Cookie", "sid=9"},
                           {"Accept-Language", "fr-CH"},
                           {"X-Forwarded-For", "6.6.6.6"},
                           {"X-Secret", "not forwarded"}});
  REQUIRE(r.status == 200);
  CHECK(r.degraded_calls() == std::nullopt);
  const auto coupon = last_headers(mock, "coupon");
  CHECK(coupon["authorization"] == "Bearer u1");
  CHECK(coupon["cookie"] == "sid=9");
  CHECK(coupon["accept-language"] == "fr-CH");
  CHECK(coupon["x-api-key"] == "key-123");
  CHECK(coupon["x-forwarded-for"] == "127.0.0.1");  // the spoofed 6.6.6.6 is dropped: not a trusted proxy
  CHECK(coupon["x-forwarded-proto"] == "http");
  CHECK(coupon["x-forwarded-host"].get<std::string>().starts_with("127.0.0.1:"));
  CHECK_FALSE(coupon.contains("x-secret"));
  CHECK_FALSE(coupon.contains("connection"));  // hop-by-hop: never forwarded
  const auto pricing = last_headers(mock, "pricing");
  CHECK(pricing["authorization"] == "Bearer u1");
  CHECK_FALSE(pricing.contains("cookie"));  // removed for this call

  // The secret is not shown by /config.
  const auto config = http_get(gw.admin_port(), "/config");
  CHECK(config.body.find("key-123") == std::string::npos);
}

TEST_CASE("header policy: a trusted proxy's X-Forwarded-For is extended, Forwarded style", "[headers]") {
  ::setenv("GATEWAY_TEST_API_KEY", "k", 1);
  mock_downstream mock({"--record-headers", recorded});
  SECTION("x-forwarded from a trusted proxy") {
    gateway_process gw(policy_config(mock, "  trusted_proxies: [127.0.0.0/8]\n"));
    REQUIRE(
        http_get(gw.port(), "/api/me", {{"X-Forwarded-For", "203.0.113.9"}, {"X-Forwarded-Proto", "https"}})
            .status == 200);
    const auto seen = last_headers(mock, "coupon");
    CHECK(seen["x-forwarded-for"] == "203.0.113.9, 127.0.0.1");
    CHECK(seen["x-forwarded-proto"] == "https");
  }
  SECTION("RFC 7239 Forwarded") {
    gateway_process gw(policy_config(mock, "  forwarded: forwarded\n"));
    REQUIRE(http_get(gw.port(), "/api/me", {{"Forwarded", "for=1.2.3.4"}}).status == 200);
    const auto seen = last_headers(mock, "coupon");
    CHECK(seen["forwarded"].get<std::string>().starts_with("for=127.0.0.1;host="));
    CHECK_FALSE(seen.contains("x-forwarded-for"));
  }
}

TEST_CASE("header policy: cached answers are never shared between clients with different forwarded fields",
          "[headers][cache]") {
  ::setenv("GATEWAY_TEST_API_KEY", "k", 1);
  mock_downstream mock({"--record-headers", recorded, "--cache-control", "max-age=60"});
  gateway_process gw(policy_config(mock, "", "    cache: true\n    coalesce: true\n"));
  const auto count = [&] { return mock.path_counter(mock.stats(), "coupon", "requests"); };
  REQUIRE(http_get(gw.port(), "/api/me", {{"Authorization", "Bearer alice"}}).status == 200);
  CHECK(count() == 1);
  REQUIRE(http_get(gw.port(), "/api/me", {{"Authorization", "Bearer alice"}}).status == 200);
  CHECK(count() == 1);  // alice's answer, from the cache
  REQUIRE(http_get(gw.port(), "/api/me", {{"Authorization", "Bearer bob"}}).status == 200);
  CHECK(count() == 2);  // bob never gets alice's answer
  CHECK(last_headers(mock, "coupon")["authorization"] == "Bearer bob");
}
