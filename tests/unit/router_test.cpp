#include "gateway/server/router.hpp"
#include "gateway/config/config_loader.hpp"

#include <catch2/catch.hpp>

using namespace gateway;

namespace {

gateway_config two_routes() {
  auto r = load_config_text(R"(
downstreams:
  d: {url: http://127.0.0.1:9}
routes:
  - path: /api/offer/aggregate
    params:
      sku: {required: true, pattern: '^[A-Za-z0-9_-]{1,64}$'}
      lang: {}
    calls: [{name: d, downstream: d, path: '/d?sku={sku}'}]
  - path: /api/offer/aggregate
    method: POST
    calls: [{name: d, downstream: d, path: /d}]
)",
                            "test.yaml");
  REQUIRE(r.errors.empty());
  return *r.config;
}

}  // namespace

TEST_CASE("routes match on path and method") {
  const auto cfg = two_routes();
  router rt(cfg.routes);
  CHECK(rt.find("GET", "/api/offer/aggregate?sku=A1").status == 200);
  CHECK(rt.find("GET", "/api/offer/aggregate?sku=A1").index == 0);
  CHECK(rt.find("POST", "/api/offer/aggregate").index == 1);
  const auto wrong = rt.find("DELETE", "/api/offer/aggregate");
  CHECK(wrong.status == 405);
  CHECK(wrong.allow == "GET, HEAD, POST");
  // HEAD takes the GET route (answered without a body by the session).
  CHECK(rt.find("HEAD", "/api/offer/aggregate?sku=A1").status == 200);
  CHECK(rt.find("HEAD", "/api/offer/aggregate?sku=A1").index == 0);
  CHECK(rt.find("GET", "/api/offer/aggregate/").status == 404);
  CHECK(rt.find("GET", "/nope").status == 404);
  // The absolute form (RFC 9112 3.2.2) names the same resource.
  CHECK(rt.find("GET", "http://gw.example:8080/api/offer/aggregate?sku=A1").status == 200);
  CHECK(target_query("http://gw.example/api/offer/aggregate?sku=A1") == "sku=A1");
  CHECK(rt.find("GET", "http://gw.example?x=/api/offer/aggregate").status == 404);
}

TEST_CASE("parameters are decoded and validated") {
  const auto cfg = two_routes();
  const auto& route = cfg.routes[0];
  std::vector<std::string> v;
  CHECK(extract_params(route, "sku=A1", v).empty());
  CHECK(v == std::vector<std::string>{"A1", ""});
  CHECK(extract_params(route, "lang=fr+CA&sku=A%2D1&sku=ignored", v).empty());
  CHECK(v == std::vector<std::string>{"A-1", "fr CA"});

  CHECK_FALSE(extract_params(route, "", v).empty());
  CHECK_FALSE(extract_params(route, "sku=", v).empty());
  for (const char* hostile : {"sku=..%2Fx", "sku=%0d%0aX:y", "sku=a%3Fb", "sku=a%23b", "sku=%C3%A9",
                              "sku=%zz", "sku=%4", "sku=a%20b"}) {
    INFO(hostile);
    CHECK_FALSE(extract_params(route, hostile, v).empty());
  }
  CHECK_FALSE(extract_params(route, "sku=" + std::string(65, 'a'), v).empty());
  CHECK(extract_params(route, "sku=" + std::string(64, 'a'), v).empty());
}

TEST_CASE("percent decoding") {
  std::string out;
  CHECK(percent_decode("a%41%62+c", out, true));
  CHECK(out == "aAb c");
  CHECK(percent_decode("a+b", out, false));
  CHECK(out == "a+b");
  CHECK_FALSE(percent_decode("%", out, true));
  CHECK_FALSE(percent_decode("%g0", out, true));
}
