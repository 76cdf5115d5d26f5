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
  const auto& pattern = cfg.routes[0].pattern;
  const auto& params = std::get<aggregate_route>(cfg.routes[0].kind).params;
  param_values v;
  CHECK(extract_params(pattern, params, "sku=A1", {}, v).empty());
  CHECK(v == param_values{"A1", ""});
  CHECK(extract_params(pattern, params, "lang=fr+CA&sku=A%2D1&sku=ignored", {}, v).empty());
  CHECK(v == param_values{"A-1", "fr CA"});

  CHECK_FALSE(extract_params(pattern, params, "", {}, v).empty());
  CHECK_FALSE(extract_params(pattern, params, "sku=", {}, v).empty());
  for (const char* hostile : {"sku=..%2Fx", "sku=%0d%0aX:y", "sku=a%3Fb", "sku=a%23b", "sku=%C3%A9",
                              "sku=%zz", "sku=%4", "sku=a%20b"}) {
    INFO(hostile);
    CHECK_FALSE(extract_params(pattern, params, hostile, {}, v).empty());
  }
  CHECK_FALSE(extract_params(pattern, params, "sku=" + std::string(65, 'a'), {}, v).empty());
  CHECK(extract_params(pattern, params, "sku=" + std::string(64, 'a'), {}, v).empty());
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

namespace {

gateway_config templated_routes() {
  auto r = load_config_text(R"(
downstreams:
  d: {url: http://127.0.0.1:9}
routes:
  - path: /api/product/{id}
    params:
      id: {pattern: '[0-9]+'}
    calls: [{name: d, downstream: d, path: '/p/{id}'}]
  - path: /api/product/featured
    calls: [{name: d, downstream: d, path: /f}]
  - path: /api/product/{id}
    method: DELETE
    calls: [{name: d, downstream: d, path: '/p/{id}'}]
  - path: /api/{kind}/{id}/reviews
    calls: [{name: d, downstream: d, path: '/r/{kind}/{id}'}]
  - path: /files/{rest*}
    calls: [{name: d, downstream: d, path: '/store/{rest*}'}]
  - path_prefix: /legacy/
    calls: [{name: d, downstream: d, path: /old}]
  - path_prefix: /legacy/v2/
    calls: [{name: d, downstream: d, path: /old2}]
)",
                            "test.yaml");
  INFO((r.errors.empty() ? std::string() : r.errors[0].message));
  REQUIRE(r.errors.empty());
  return *r.config;
}

std::vector<std::string> params_of(const gateway_config& cfg, const router& rt, const std::string& target,
                                   std::string& problem) {
  const auto found = rt.find("GET", target);
  REQUIRE(found.status == 200);
  param_values values;
  const auto& route = cfg.routes[found.index];
  problem = extract_params(route.pattern, std::get<aggregate_route>(route.kind).params, target_query(target),
                           found.captures, values);
  return {values.begin(), values.end()};
}

}  // namespace

TEST_CASE("route templates: exact before template before prefix, literals before parameters", "[routing]") {
  const auto cfg = templated_routes();
  router rt(cfg.routes);
  CHECK(rt.find("GET", "/api/product/featured").index == 1);  // exact wins over /api/product/{id}
  CHECK(rt.find("GET", "/api/product/42").index == 0);
  CHECK(rt.find("DELETE", "/api/product/42").index == 2);
  CHECK(rt.find("GET", "/api/product/42/reviews").index == 3);
  CHECK(rt.find("GET", "/api/product/").status == 404);  // an empty segment is no parameter
  CHECK(rt.find("GET", "/api/product/42/x").status == 404);
  const auto wrong = rt.find("PUT", "/api/product/42");
  CHECK(wrong.status == 405);
  CHECK(wrong.allow == "GET, HEAD, DELETE");
  CHECK(rt.find("GET", "/files/a/b.txt").index == 4);
  CHECK(rt.find("GET", "/files/").index == 4);
  CHECK(rt.find("GET", "/files").status == 404);
  CHECK(rt.find("GET", "/legacy/x/y").index == 5);
  CHECK(rt.find("GET", "/legacy/v2/y").index == 6);  // the longest prefix
  CHECK(rt.find("GET", "/legacy").status == 404);
}

TEST_CASE("route templates: path parameters are decoded, validated and never taken from the query",
          "[routing]") {
  const auto cfg = templated_routes();
  router rt(cfg.routes);
  std::string problem;
  auto v = params_of(cfg, rt, "/api/product/42?id=7", problem);
  CHECK(problem.empty());
  CHECK(v[0] == "42");
  (void)params_of(cfg, rt, "/api/product/4x2", problem);
  CHECK_THAT(problem, Catch::Contains("invalid value for parameter 'id'"));
  (void)params_of(cfg, rt, "/api/product/%zz", problem);
  CHECK_FALSE(problem.empty());
  v = params_of(cfg, rt, "/api/a%20b/c%2Fd/reviews", problem);
  CHECK(problem.empty());
  CHECK(v[0] == "a b");
  CHECK(v[1] == "c/d");
  v = params_of(cfg, rt, "/files/dir/a%20b.txt", problem);
  CHECK(problem.empty());
  CHECK(v[0] == "dir/a b.txt");
  for (const std::string bad : {"/files/../etc/passwd", "/files/a/./b", "/files/a%2Fb", "/files/%2e%2e/x"}) {
    INFO(bad);
    (void)params_of(cfg, rt, bad, problem);
    CHECK_FALSE(problem.empty());
  }
}

TEST_CASE("route templates: a catch-all's segments are encoded one by one into a call's {name*}",
          "[routing]") {
  std::string problem;
  const auto t = path_template::parse("/store/{rest*}?whole={rest}", problem);
  REQUIRE(t);
  std::string out;
  t->expand(out, [](const std::string&) -> std::string_view { return "dir/a b.txt"; });
  CHECK(out == "/store/dir/a%20b%2Etxt?whole=dir%2Fa%20b%2Etxt");
}
