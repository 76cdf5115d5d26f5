// Routes with path parameters, catch-alls and prefixes, against the real gateway and mock: values from
// the path reach the downstream call decoded and encoded again, bad values are refused with 400, and
// the more specific route wins.

#include "tests/support/http_client.hpp"
#include "tests/support/processes.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace test_support;

namespace {

std::string routing_config(const mock_downstream& mock) {
  return R"(server:
  listen: 127.0.0.1:0
  threads: 2
downstreams:
  mock:
    url: )" +
         mock.url() +
         R"(
routes:
  - path: /api/product/{sku}
    params:
      sku: {pattern: '[A-Z0-9 ]+'}
      lang: {}
    response: object
    calls:
      - {name: coupon, downstream: mock, path: '/coupon?sku={sku}&lang={lang}'}
  - path: /api/product/featured
    response: object
    calls:
      - {name: coupon, downstream: mock, path: '/coupon?sku=FEATURED'}
  - path: /files/{rest*}
    response: object
    calls:
      - {name: store, downstream: mock, path: '/store/{rest*}'}
  - path_prefix: /legacy/
    response: object
    calls:
      - {name: legacy, downstream: mock, path: '/legacy'}
)";
}

}  // namespace

TEST_CASE("routing: a path parameter reaches the call, validated, exact routes win", "[routing]") {
  mock_downstream mock;
  gateway_process gw(routing_config(mock));

  auto r = http_get(gw.port(), "/api/product/AB%2012?lang=fr");
  REQUIRE(r.status == 200);
  auto body = r.json();
  CHECK(body["coupon"]["sku"] == "AB 12");
  CHECK(body["coupon"]["query"]["lang"] == "fr");

  r = http_get(gw.port(), "/api/product/featured");
  REQUIRE(r.status == 200);
  CHECK(r.json()["coupon"]["sku"] == "FEATURED");

  r = http_get(gw.port(), "/api/product/ab");  // fails the pattern
  CHECK(r.status == 400);
  CHECK_THAT(r.body, Catch::Contains("parameter 'sku'"));
  CHECK(http_get(gw.port(), "/api/product/").status == 404);
  CHECK(http_get(gw.port(), "/api/product/A/B").status == 404);
}

TEST_CASE("routing: a catch-all passes its segments on, dot segments are resolved before it matches",
          "[routing]") {
  mock_downstream mock;
  gateway_process gw(routing_config(mock));

  auto r = http_get(gw.port(), "/files/dir/a%20b.txt");
  REQUIRE(r.status == 200);
  CHECK(r.json()["store"]["degraded"] == false);
  // The target is made canonical first (codec/request_target.hpp): ".." cannot climb out of the route's
  // prefix, whatever its encoding; it only names another path, matched as such.
  CHECK(http_get(gw.port(), "/files/../x").status == 404);  // "/x": no route
  r = http_get(gw.port(), "/files/a/%2e%2e/x");             // "/files/x"
  REQUIRE(r.status == 200);
  CHECK(r.json()["store"]["degraded"] == false);
  CHECK(http_get(gw.port(), "/files/a%2Fb").status == 400);  // an encoded '/' is refused
  // The mock saw the catch-all's segments, each encoded again, and never a dot segment.
  const auto stats = mock.stats();
  CHECK(mock.path_counter(stats, "store/dir/a%20b%2Etxt", "requests") == 1);
  CHECK(mock.path_counter(stats, "store/x", "requests") == 1);
}

TEST_CASE("routing: a path_prefix route takes every path under it", "[routing]") {
  mock_downstream mock;
  gateway_process gw(routing_config(mock));
  for (const std::string path : {"/legacy/", "/legacy/a", "/legacy/a/b?x=1"}) {
    INFO(path);
    const auto r = http_get(gw.port(), path);
    REQUIRE(r.status == 200);
    CHECK(r.json()["legacy"]["degraded"] == false);
  }
  CHECK(http_get(gw.port(), "/legacy").status == 404);
}

namespace {

std::string cors_config(const mock_downstream& mock) {
  return R"(server:
  listen: 127.0.0.1:0
downstreams:
  mock:
    url: )" +
         mock.url() +
         R"(
routes:
  - path: /api/product/{sku}
    response: object
    cors:
      allow_origins: ['https://shop.example']
      allow_headers: [Authorization]
      expose_headers: [X-Degraded]
      max_age: 2m
    calls:
      - {name: coupon, downstream: mock, path: '/coupon?sku={sku}'}
  - path: /api/private
    calls:
      - {name: coupon, downstream: mock, path: '/coupon?sku=P'}
)";
}

}  // namespace

TEST_CASE("routing: CORS preflights are answered by the gateway, answers carry the CORS fields",
          "[routing][cors]") {
  mock_downstream mock;
  gateway_process gw(cors_config(mock));
  const header_list preflight{{"Origin", "https://shop.example"},
                              {"Access-Control-Request-Method", "GET"},
                              {"Access-Control-Request-Headers", "authorization"}};
  http_connection client(gw.port());
  auto r = client.request("OPTIONS", "/api/product/A1", preflight);
  CHECK(r.status == 204);
  CHECK(r.header("Access-Control-Allow-Origin") == "https://shop.example");
  CHECK(r.header("Access-Control-Allow-Methods") == "GET");
  CHECK(r.header("Access-Control-Max-Age") == "120");
  CHECK_FALSE(r.has_header("Content-Length"));
  CHECK(mock.path_counter(mock.stats(), "coupon", "requests") == 0);  // no downstream call

  r = client.request("OPTIONS", "/api/product/A1",
                     {{"Origin", "https://evil.example"}, {"Access-Control-Request-Method", "GET"}});
  CHECK(r.status == 403);
  r = client.request("OPTIONS", "/api/private",
                     {{"Origin", "https://shop.example"}, {"Access-Control-Request-Method", "GET"}});
  CHECK(r.status == 403);  // no cors section

  // A plain OPTIONS names the path's methods.
  r = client.request("OPTIONS", "/api/private");
  CHECK(r.status == 204);
  CHECK(r.header("Allow") == "GET, HEAD, OPTIONS");
  CHECK(client.request("OPTIONS", "/nope").status == 404);

  r = client.get("/api/product/A1", {{"Origin", "https://shop.example"}});
  CHECK(r.status == 200);
  CHECK(r.header("Access-Control-Allow-Origin") == "https://shop.example");
  CHECK(r.header("Access-Control-Expose-Headers") == "X-Degraded");
  r = client.get("/api/product/A1", {{"Origin", "https://evil.example"}});
  CHECK(r.status == 200);
  CHECK_FALSE(r.has_header("Access-Control-Allow-Origin"));
}
