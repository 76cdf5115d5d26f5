// The mock downstream itself, as the resilience tests use it: several endpoints in one process with a
// behaviour overridden for one of them, per-endpoint counters, latency tails, the query echo and a path's
// own body; and as the tests of dependent calls use it: a prefix's templated body and arrays of items.

#include "tests/support/http_client.hpp"
#include "tests/support/offer_checks.hpp"
#include "tests/support/processes.hpp"

#include <catch2/catch.hpp>

#include <thread>

using namespace test_support;
using namespace std::chrono_literals;

TEST_CASE("mock: one of two endpoints fails, counted per endpoint", "[mock]") {
  mock_downstream mock(2, {"--delay", "1ms"});
  REQUIRE(mock.ports().size() == 2);
  const auto healthy = mock.ports()[0];
  const auto failing = mock.ports()[1];
  REQUIRE(healthy != failing);
  CHECK(mock.port() == healthy);
  CHECK(mock.url(1) == "http://127.0.0.1:" + std::to_string(failing));

  mock.control("coupon", "fail", "", failing);
  for (int i = 0; i < 3; ++i) {
    CHECK(http_get(healthy, "/coupon?sku=A1").status == 200);
    CHECK(http_get(failing, "/coupon?sku=A1").status == 500);
  }
  CHECK(http_get(failing, "/inventory?sku=A1").status == 200);  // other paths keep the shared behaviour

  auto stats = mock.stats();
  INFO(stats.dump());
  CHECK(stats["requests"] == 7);
  CHECK(mock.path_counter(stats, "coupon", "requests") == 6);
  CHECK(mock.endpoint_counter(stats, healthy, "requests") == 3);
  CHECK(mock.endpoint_counter(stats, failing, "requests") == 4);
  CHECK(mock.endpoint_counter(stats, healthy, "requests", "coupon") == 3);
  CHECK(mock.endpoint_counter(stats, failing, "requests", "coupon") == 3);
  CHECK(mock.endpoint_counter(stats, failing, "requests", "inventory") == 1);
  CHECK(mock.endpoint_counter(stats, healthy, "requests", "inventory") == 0);

  // A client giving up on the slow endpoint is a cancellation there, and only there.
  mock.control("coupon", "ok", "5s", healthy);
  http_connection conn(healthy);
  conn.send_request("GET", "/coupon?sku=A2");
  stats = mock.wait_stats([&](const auto& s) { return mock.endpoint_counter(s, healthy, "requests") == 4; });
  REQUIRE(mock.endpoint_counter(stats, healthy, "requests") == 4);
  conn.close();
  stats = mock.wait_stats([&](const auto& s) { return mock.endpoint_counter(s, healthy, "cancelled") == 1; });
  CHECK(mock.endpoint_counter(stats, healthy, "cancelled") == 1);
  CHECK(mock.endpoint_counter(stats, healthy, "cancelled", "coupon") == 1);
  CHECK(mock.endpoint_counter(stats, failing, "cancelled") == 0);
  CHECK(stats["cancelled"] == 1);

  // A change without a port reaches both endpoints.
  mock.control("coupon", "ok", "1ms");
  CHECK(http_get(failing, "/coupon?sku=A1").status == 200);
  CHECK(http_get(healthy, "/coupon?sku=A1", {}, 2000ms).status == 200);
}

TEST_CASE("mock: a latency tail slows about its share of the answers", "[mock]") {
  mock_downstream mock({"--seed", "3"});
  mock.control("coupon", "ok", "1ms,p50=300ms");
  constexpr std::size_t requests = 40;
  std::vector<milliseconds> took(requests);
  std::vector<int> status(requests);
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < requests; ++i) {
    clients.emplace_back([&, i] {
      const auto start = steady_clock::now();
      try {
        status[i] = http_get(mock.port(), "/coupon?sku=T" + std::to_string(i)).status;
      } catch (const http_error&) {
        status[i] = -1;
      }
      took[i] = elapsed_since(start);
    });
  }
  for (auto& c : clients) c.join();
  int slow = 0;
  for (std::size_t i = 0; i < requests; ++i) {
    INFO("request " << i << ": " << took[i].count() << " ms");
    CHECK(status[i] == 200);
    slow += took[i] >= 250ms;
  }
  INFO(slow << " of " << requests << " slow");
  CHECK(slow >= 8);
  CHECK(slow <= 32);
}

TEST_CASE("mock: query parameters are echoed, and a path may have its own body", "[mock]") {
  mock_downstream mock({"--delay", "1ms"});
  const auto plain = http_get(mock.port(), "/coupon?sku=A1");
  REQUIRE(plain.status == 200);
  CHECK(plain.body == R"({"source":"coupon","sku":"A1","priceCent":1259,"stock":959})");

  const auto echoed = http_get(mock.port(), "/coupon?sku=A1&region=eu&lang=de%2Dch").json();
  CHECK(echoed["sku"] == "A1");
  CHECK(echoed["query"] == nlohmann::json{{"region", "eu"}, {"lang", "de-ch"}});

  const std::string body = R"({"offers": [{"id": 1}], "note": "as written"})";
  mock.set_body("coupon", body);
  CHECK(http_get(mock.port(), "/coupon?sku=A1&x=1").body == body);
  mock.set_body("coupon", "");
  CHECK(http_get(mock.port(), "/coupon?sku=A1").body == plain.body);
}

TEST_CASE("mock: a prefix's templated body echoes the id each request asks for", "[mock]") {
  mock_downstream mock({"--delay", "1ms"});
  mock.set_body("seller/*", R"({"id": "{#seg.1}", "name": "seller {seg.1}", "product": "{query.product}", )"
                            R"("tenant": "{header.X-Tenant}"})");
  mock.control("seller/99", "fail");  // an exact setting wins over the prefix

  const auto first = http_get(mock.port(), "/seller/17?product=p%221", {{"X-Tenant", "acme"}});
  REQUIRE(first.status == 200);
  CHECK(first.body == R"({"id": 17, "name": "seller 17", "product": "p\"1", "tenant": "acme"})");
  const auto second = http_get(mock.port(), "/seller/abc").json();
  CHECK(second == nlohmann::json{{"id", "abc"}, {"name", "seller abc"}, {"product", ""}, {"tenant", ""}});
  CHECK(http_get(mock.port(), "/seller/99").status == 500);
  CHECK(http_get(mock.port(), "/seller").json().contains("sku"));  // not under "seller/": generated

  // A client that gives up on a path under a prefix is counted as cancelled on that path.
  mock.control("slow/*", "ok", "5s");
  http_connection conn(mock.port());
  conn.send_request("GET", "/slow/1");
  auto stats =
      mock.wait_stats([&](const auto& s) { return mock.path_counter(s, "slow/1", "requests") == 1; });
  REQUIRE(mock.path_counter(stats, "slow/1", "requests") == 1);
  conn.close();
  stats = mock.wait_stats([&](const auto& s) { return mock.path_counter(s, "slow/1", "cancelled") == 1; });
  INFO(stats.dump());
  CHECK(mock.path_counter(stats, "slow/1", "cancelled") == 1);
  CHECK(mock.path_counter(stats, "seller/17", "requests") == 1);
  CHECK(mock.path_counter(stats, "seller/abc", "requests") == 1);
  CHECK_FALSE(stats["paths"].contains("seller/*"));
}

TEST_CASE("mock: mode items answers count items", "[mock]") {
  mock_downstream mock({"--path", "reviews=items:1ms"});
  const auto three = http_get(mock.port(), "/reviews?product=7");
  REQUIRE(three.status == 200);
  CHECK(three.body == R"({"source":"reviews","count":3,"items":[{"id":"reviews-0","n":0},)"
                      R"({"id":"reviews-1","n":1},{"id":"reviews-2","n":2}]})");
  const auto many = http_get(mock.port(), "/reviews?count=500&product=7").json();
  CHECK(many["count"] == 500);
  REQUIRE(many["items"].size() == 500);
  CHECK(many["items"][499]["id"] == "reviews-499");
  const auto bad = http_get(mock.port(), "/reviews?count=10001");
  CHECK(bad.status == 400);
  CHECK(bad.body == R"({"error":"bad count: give 0 to 10000"})");
}
