// The admin status page: /status.json after known traffic (a hung downstream, its breaker opening), the
// ring of the last degraded requests (bounded, newest first, with request ids and each call's reason), the
// page itself, and admin.require_token (probes open, every other path needs the bearer token).

#include "tests/support/offer_checks.hpp"

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

// A breaker that opens after three failures in a row and stays open well beyond the test.
const std::string slow_breaker =
    "    circuit_breaker: {consecutive_failures: 3, cooldown: 60s, half_open_calls: 1}\n";

const nlohmann::json& named(const nlohmann::json& list, const std::string& key, const std::string& name) {
  for (const auto& item : list) {
    if (item.at(key) == name) return item;
  }
  FAIL("no item with " << key << " = " << name << " in " << list.dump());
  throw std::logic_error("unreachable");
}

nlohmann::json status(gateway_process& gw, const header_list& headers = {}) {
  auto res = http_get(gw.admin_port(), "/status.json", headers);
  REQUIRE(res.status == 200);
  CHECK(res.header("content-type").value_or("") == "application/json");
  return res.json();
}

// `n` offers with X-Request-Id PREFIX-<first>.., each degraded by the coupon call.
void degraded_offers(gateway_process& gw, const std::string& prefix, int first, int n) {
  for (int i = first; i < first + n; ++i) {
    const auto id = prefix + "-" + std::to_string(i);
    auto res = http_get(gw.port(), offer_target("S" + std::to_string(i)), {{"X-Request-Id", id}});
    check_offer(res, "S" + std::to_string(i), {"coupon"});
  }
}

}  // namespace

TEST_CASE(
    "status page: /status.json shows the routes, the hung downstream down with its breaker open, the "
    "process and the configuration",
    "[admin][status]") {
  mock_downstream mock({"--delay", "5ms", "--path", "coupon=hang"});
  seed_config cfg{mock.url()};
  cfg.deadline = "300ms";
  cfg.downstream_extra = slow_breaker;
  gateway_process gw(cfg.yaml());
  degraded_offers(gw, "status", 0, 10);  // 3 time out (the breaker opens), 7 refused by the open breaker

  auto res = http_get(gw.admin_port(), "/status.json");
  REQUIRE(res.status == 200);
  const auto s = res.json();
  INFO(s.dump(2));
  const auto config = http_get(gw.admin_port(), "/config").json();
  CHECK(s["config"]["version"] == config["version"]);
  CHECK(res.header("x-config-version").value_or("") == config["version"]);
  CHECK(s["config"]["reloads"]["succeeded"] == 0);
  CHECK(s["config"]["reloads"]["failed"] == 0);
  CHECK(s["config"]["last_reload"].get<double>() > 1.6e9);
  CHECK(s["window_seconds"].get<double>() > 0);
  CHECK(s["window_seconds"].get<double>() <= 35);

  REQUIRE(s["routes"].size() == 1);
  const auto& route = s["routes"][0];
  CHECK(route["route"] == "/api/offer/aggregate");
  CHECK(route["method"] == "GET");
  CHECK(route["requests"] == 10);
  CHECK(route["degraded"] == 10);
  CHECK(route["degraded_share"] == 1.0);
  CHECK(route["server_errors"] == 0);
  CHECK(route["rate"].get<double>() > 0);
  CHECK(route["p50_ms"].get<double>() < 250);   // seven answered without waiting for the hung call
  CHECK(route["p99_ms"].get<double>() >= 250);  // three waited for the 300 ms deadline
  CHECK(route["total"]["requests"] == 10);

  REQUIRE(s["downstreams"].size() == seed_calls.size());
  const auto& coupon = named(s["downstreams"], "name", "coupon");
  CHECK(coupon["kind"] == "http");
  CHECK(coupon["breaker"] == "open");
  CHECK(coupon["status"] == "down");
  CHECK(coupon["calls"] == 10);
  CHECK(coupon["outcomes"]["timeout"] == 3);
  CHECK(coupon["outcomes"]["circuit_open"] == 7);
  CHECK(coupon["outcomes"]["ok"] == 0);
  CHECK(coupon["failure_share"] == 1.0);
  CHECK(coupon["endpoints"] == 1);
  CHECK(coupon["p99_ms"].get<double>() >= 250);
  CHECK(coupon["pool"].is_null());  // an HTTP downstream's pools are per I/O thread
  const auto& inventory = named(s["downstreams"], "name", "inventory");
  CHECK(inventory["breaker"] == "closed");
  CHECK(inventory["status"] == "ok");
  CHECK(inventory["outcomes"]["ok"] == 10);
  CHECK(inventory["failure_share"] == 0.0);
  CHECK(inventory["p50_ms"].get<double>() < 250);
  CHECK(s["databases"].empty());

  const auto& p = s["process"];
  CHECK(p["io_threads"] == 2);
  CHECK(p["coroutines"].get<long long>() >= 0);
  CHECK(p["resident_bytes"].get<long long>() > 0);
  CHECK(p["memory_budget_bytes"].get<long long>() > 0);
  CHECK(p["buffered_bytes"].get<long long>() >= 0);
  CHECK(p["open_connections"].get<long long>() >= 0);
  CHECK(p["inflight"] == 0);
  CHECK(p["shed"]["max_inflight"] == 0);
  CHECK(p["loop_lag_p99_ms"].is_number());  // the heartbeats have fired

  const auto& recent = s["recent_degraded"];
  CHECK(recent["capacity"] == 20);
  CHECK(recent["recorded"] == 10);
  REQUIRE(recent["requests"].size() == 10);
  const auto& newest = recent["requests"][0];
  CHECK(newest["request_id"] == "status-9");
  CHECK(newest["route"] == "/api/offer/aggregate");
  CHECK(newest["time"].get<double>() > 1.6e9);
  REQUIRE(newest["calls"].size() == 1);
  CHECK(newest["calls"][0]["call"] == "coupon");
  CHECK(newest["calls"][0]["downstream"] == "coupon");
  CHECK(newest["calls"][0]["outcome"] == "circuit_open");
  const auto& oldest = recent["requests"][9];
  CHECK(oldest["request_id"] == "status-0");
  REQUIRE(oldest["calls"].size() == 1);
  CHECK(oldest["calls"][0]["outcome"] == "timeout");
  CHECK(oldest["calls"][0]["latency_ms"].get<double>() >= 250);
  check_clean_exit(gw);
}

TEST_CASE(
    "status page: P50 and P99 of a route whose answers all wait for the deadline are within 5% of "
    "what its clients measure",
    "[admin][status]") {
  mock_downstream mock({"--delay", "2ms", "--path", "coupon=hang"});
  seed_config cfg{mock.url()};
  cfg.deadline = "500ms";
  cfg.downstream_extra = "    circuit_breaker: {enabled: false}\n";
  gateway_process gw(cfg.yaml());

  // Four clients at once, each sending its requests one after another: every answer takes the deadline.
  constexpr int clients = 4;
  constexpr int per_client = 4;
  std::vector<double> measured(clients * per_client);
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      for (int i = 0; i < per_client; ++i) {
        const auto start = std::chrono::steady_clock::now();
        const auto res = http_get(gw.port(), offer_target("Q" + std::to_string(c * per_client + i)));
        measured[static_cast<std::size_t>(c * per_client + i)] =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        if (res.status != 200) measured[static_cast<std::size_t>(c * per_client + i)] = -1;
      }
    });
  }
  for (auto& t : threads) t.join();
  std::sort(measured.begin(), measured.end());
  REQUIRE(measured.front() >= 450);  // every request answered (200) after waiting for the deadline
  const double client_p50 = measured[measured.size() / 2];
  const double client_p99 = measured.back();

  // The gateway counts a request once its answer is written: the last one may land just after its client
  // has read it.
  auto route = status(gw)["routes"][0];
  for (const auto until = std::chrono::steady_clock::now() + 3s;
       route["requests"] != clients * per_client && std::chrono::steady_clock::now() < until;) {
    std::this_thread::sleep_for(20ms);
    route = status(gw)["routes"][0];
  }
  INFO("client p50 " << client_p50 << " ms, p99 " << client_p99 << " ms; page " << route.dump());
  CHECK(route["requests"] == clients * per_client);
  CHECK(route["p50_ms"].get<double>() == Approx(client_p50).epsilon(0.05));
  CHECK(route["p99_ms"].get<double>() == Approx(client_p99).epsilon(0.05));
  check_clean_exit(gw);
}

TEST_CASE("status page: the ring of degraded requests keeps the newest 20, healthy requests add nothing",
          "[admin][status]") {
  mock_downstream mock({"--delay", "2ms", "--path", "coupon=fail"});
  seed_config cfg{mock.url()};
  cfg.downstream_extra = "    circuit_breaker: {enabled: false}\n";
  gateway_process gw(cfg.yaml());
  degraded_offers(gw, "ring", 0, 35);
  mock.set_mode("coupon", "ok");
  for (int i = 0; i < 5; ++i)
    check_offer(http_get(gw.port(), offer_target("H" + std::to_string(i))), "H" + std::to_string(i));

  const auto s = status(gw);
  const auto& recent = s["recent_degraded"];
  CHECK(recent["recorded"] == 35);
  REQUIRE(recent["requests"].size() == 20);
  for (std::size_t i = 0; i < 20; ++i) {
    INFO(i);
    CHECK(recent["requests"][i]["request_id"] == "ring-" + std::to_string(34 - i));
    CHECK(recent["requests"][i]["calls"][0]["outcome"] == "status_5xx");
    CHECK(recent["requests"][i]["calls"][0]["detail"] == "status 500");
  }
  const auto& route = s["routes"][0];
  CHECK(route["requests"] == 40);
  CHECK(route["degraded"] == 35);
  CHECK(route["degraded_share"].get<double>() == Approx(35.0 / 40.0));
  const auto& coupon = named(s["downstreams"], "name", "coupon");
  CHECK(coupon["breaker"].is_null());  // no breaker
  CHECK(coupon["status"] == "degraded");
  CHECK(coupon["outcomes"]["status_5xx"] == 35);
  CHECK(coupon["outcomes"]["ok"] == 5);
  check_clean_exit(gw);
}

TEST_CASE("status page: GET / serves one self-contained HTML page that polls status.json",
          "[admin][status]") {
  mock_downstream mock({"--delay", "2ms"});
  gateway_process gw(seed_config{mock.url()}.yaml());
  http_connection admin(gw.admin_port());
  auto page = admin.get("/");
  REQUIRE(page.status == 200);
  CHECK(page.header("content-type").value_or("") == "text/html; charset=utf-8");
  CHECK(page.header("cache-control").value_or("") == "no-store");
  CHECK(page.body.rfind("<!DOCTYPE html>", 0) == 0);
  for (const std::string hook : {"id=\"routes\"", "id=\"downstreams\"", "id=\"databases\"", "id=\"process\"",
                                 "id=\"recent\"", "id=\"config-version\"", "fetch(\"status.json\""}) {
    INFO(hook);
    CHECK(page.body.find(hook) != std::string::npos);
  }
  // Nothing loaded from elsewhere.
  for (const std::string external : {"src=", "href=", "http://", "https://", "@import"}) {
    INFO(external);
    CHECK(page.body.find(external) == std::string::npos);
  }
  // HEAD: the head of the GET, no body.
  http_connection head(gw.admin_port());
  head.send_raw("HEAD / HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n");
  std::string received;
  CHECK(head.wait_closed_by_peer(5s, &received));
  CHECK(received.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(received.find("Content-Length: " + std::to_string(page.body.size())) != std::string::npos);
  CHECK(received.size() == received.find("\r\n\r\n") + 4);
  check_clean_exit(gw);
}

TEST_CASE("admin.require_token: probes stay open, every other admin path needs the bearer token",
          "[admin][status]") {
  mock_downstream mock({"--delay", "2ms"});
  const std::string token = "status-page-token-0123";
  gateway_process gw(seed_config{mock.url()}.yaml() + "admin:\n  listen: 127.0.0.1:0\n  token: " + token +
                     "\n  require_token: true\n");
  const header_list good{{"Authorization", "Bearer " + token}};
  const header_list wrong{{"Authorization", "Bearer status-page-token-0124"}};
  http_connection admin(gw.admin_port());

  for (const std::string probe : {"/livez", "/startupz", "/readyz"}) {
    INFO(probe);
    // /startupz and /readyz may answer 503 for a moment after the listening lines: poll.
    auto res = admin.get(probe);
    for (const auto until = steady_clock::now() + 5s; res.status != 200 && steady_clock::now() < until;)
      res = admin.get(probe);
    CHECK(res.status == 200);
    CHECK(admin.get(probe, wrong).status == 200);
  }
  for (const std::string path : {"/", "/status.json", "/metrics", "/config", "/nothing-here"}) {
    INFO(path);
    auto none = admin.get(path);
    CHECK(none.status == 401);
    CHECK(none.header("www-authenticate").value_or("").rfind("Bearer", 0) == 0);
    CHECK(none.body.find("gateway_") == std::string::npos);
    CHECK(admin.get(path, wrong).status == 403);
    CHECK(admin.get(path, {{"Authorization", "Basic " + token}}).status == 403);
    CHECK(admin.get(path, good).status == (path == "/nothing-here" ? 404 : 200));
  }
  CHECK(admin.get("/status.json", good).json()["routes"].size() == 1);
  // A loopback caller no longer reloads without the token.
  CHECK(admin.request("POST", "/reload").status == 401);
  CHECK(admin.request("POST", "/reload", wrong).status == 403);
  auto reload = admin.request("POST", "/reload", good);
  CHECK(reload.status == 200);
  CHECK(reload.json()["unchanged"] == true);
  check_clean_exit(gw);
}
