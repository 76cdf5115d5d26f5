// What the access log and the gateway's own error answers tell: a pass-through request with its path and
// user agent, a 405 under the route whose path matched, a call answered from the cache marked as such
// with the stored answer's status and age, one detail per failure, and server.error_detail: `full` names
// the failed call, `reason` only says what kind of failure it was; every error body carries the request id.

#include "tests/support/load_clients.hpp"
#include "tests/support/offer_checks.hpp"
#include "tests/support/text_edit.hpp"

#include <chrono>
#include <regex>
#include <string>
#include <thread>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

const std::string json_log = "log:\n  access: true\n  format: json\n";

// The access log's JSON line of request `id`.
nlohmann::json access_line(gateway_process& gw, const std::string& id) {
  auto found = gw.process().wait_for_line(std::regex("^.*\"request_id\":\"" + id + "\".*$"), 5s);
  INFO("stdout so far:\n" << gw.process().stdout_text().substr(0, 4000));
  REQUIRE(found);
  INFO((*found)[0]);
  auto j = nlohmann::json::parse((*found)[0], nullptr, false);
  REQUIRE(j.is_object());
  return j;
}

// The seed configuration with `server_lines` added to its server section.
std::string with_server(const seed_config& cfg, const std::string& server_lines) {
  return replace_once(cfg.yaml(), "server:\n", "server:\n" + server_lines);
}

// A gateway error body: {"error": ..., "request_id": ...} and nothing else.
nlohmann::json error_of(const http_response& res, int status, const std::string& request_id) {
  check_error(res, status);
  auto body = res.json();
  INFO(res.body);
  CHECK(body["request_id"] == request_id);
  CHECK(res.header("x-request-id").value_or("") == request_id);
  CHECK(body.size() == 2);
  return body;
}

}  // namespace

TEST_CASE("access log: a pass-through request is logged with its path and user agent", "[access][proxy]") {
  mock_downstream mock;
  gateway_process gw(
      "server:\n  listen: 127.0.0.1:0\n  threads: 2\n" + json_log +
      "downstreams:\n  shop:\n    url: " + mock.url() +
      "\nroutes:\n  - path_prefix: /shop/\n    proxy:\n      downstream: shop\n      rewrite: /\n");
  const auto res =
      http_get(gw.port(), "/shop/coupon?sku=7", {{"X-Request-Id", "px-1"}, {"User-Agent", "probe/2.0"}});
  CHECK(res.status == 200);
  const auto j = access_line(gw, "px-1");
  CHECK(j["route"] == "/shop/");
  CHECK(j["status"] == 200);
  CHECK(j["path"] == "/shop/coupon?sku=7");
  CHECK(j["user_agent"] == "probe/2.0");
  CHECK(j["bytes"] == res.body.size());
}

TEST_CASE("access log: a 405 is logged under the route whose path matched", "[access]") {
  mock_downstream mock({"--delay", "2ms"});
  gateway_process gw(seed_config{mock.url()}.yaml() + json_log);
  http_connection conn(gw.port());
  error_of(conn.request("DELETE", offer_target("M1"), {{"X-Request-Id", "m-405"}}), 405, "m-405");
  const auto j = access_line(gw, "m-405");
  CHECK(j["route"] == "/api/offer/aggregate");
  CHECK(j["status"] == 405);
  CHECK(j["method"] == "DELETE");
  error_of(conn.get("/nowhere", {{"X-Request-Id", "m-404"}}), 404, "m-404");
  CHECK(access_line(gw, "m-404")["route"] == "unmatched");
}

TEST_CASE("access log: a call answered from the cache is marked cached, with the stored status and its age",
          "[access][cache]") {
  mock_downstream mock({"--delay", "2ms", "--cache-control", "public, max-age=60"});
  seed_config cfg{mock.url()};
  cfg.downstream_extra = "    cache: true\n";
  gateway_process gw(cfg.yaml() + json_log);
  check_offer(http_get(gw.port(), offer_target("C1"), {{"X-Request-Id", "c-1"}}), "C1");
  const auto first = access_line(gw, "c-1");
  for (const auto& c : first["calls"]) {
    INFO(c.dump());
    CHECK(c["outcome"] == "ok");
    CHECK(c["status"] == 200);
    CHECK_FALSE(c.contains("cached"));
  }
  std::this_thread::sleep_for(1100ms);  // the stored answers are a second old
  check_offer(http_get(gw.port(), offer_target("C1"), {{"X-Request-Id", "c-2"}}), "C1");
  CHECK(mock.path_counter(mock.stats(), "coupon", "requests") == 1);
  const auto second = access_line(gw, "c-2");
  REQUIRE(second["calls"].size() == seed_calls.size());
  for (const auto& c : second["calls"]) {
    INFO(c.dump());
    CHECK(c["outcome"] == "ok");
    CHECK(c["cached"] == true);
    CHECK(c["status"] == 200);  // the stored answer's
    CHECK(c.value("age_s", -1) >= 1);
    CHECK(c.value("ms", -1.0) >= 0);
  }
}

TEST_CASE("error answers: a failed required call names the call and its status once, with the request id",
          "[access][required]") {
  mock_downstream mock({"--delay", "2ms", "--path", "inventory=fail"});
  seed_config cfg{mock.url()};
  cfg.required_calls = {"inventory"};
  gateway_process gw(cfg.yaml());
  const auto body = error_of(http_get(gw.port(), offer_target("E1"), {{"X-Request-Id", "e-1"}}), 502, "e-1");
  CHECK(body["error"] == "required call 'inventory' failed: status 500");
  // The diagnostic log's line: the outcome and one detail.
  const std::string line =
      "call 'inventory' of route /api/offer/aggregate to downstream 'inventory' failed: "
      "status_5xx (status 500), request e-1";
  for (int i = 0; i < 100 && gw.process().stderr_text().find("request e-1") == std::string::npos; ++i)
    std::this_thread::sleep_for(20ms);
  INFO(gw.process().stderr_text());
  CHECK(gw.process().stderr_text().find(line) != std::string::npos);
}

TEST_CASE(
    "error answers: server.error_detail reason names no call nor downstream, and every error the gateway "
    "makes carries the request id",
    "[access][required]") {
  mock_downstream mock({"--delay", "2ms", "--path", "inventory=fail"});
  refused_port refused;
  seed_config cfg{mock.url()};
  cfg.required_calls = {"inventory"};
  auto yaml = with_server(cfg, "  error_detail: reason\n");
  yaml = replace_once(yaml, "downstreams:\n",
                      "downstreams:\n  gone:\n    url: http://127.0.0.1:" + std::to_string(refused.port()) +
                          "\n    circuit_breaker: {enabled: false}\n");
  yaml += "  - path_prefix: /raw/\n    proxy:\n      downstream: gone\n";
  gateway_process gw(yaml);
  http_connection conn(gw.port());

  auto failed = error_of(conn.get(offer_target("R1"), {{"X-Request-Id", "r-1"}}), 502, "r-1");
  CHECK(failed["error"] == "upstream failure");
  auto proxied = error_of(http_get(gw.port(), "/raw/x", {{"X-Request-Id", "r-2"}}), 502, "r-2");
  CHECK(proxied["error"] == "upstream failure");
  // The client's own mistakes keep their explanation.
  auto bad = error_of(conn.get("/api/offer/aggregate?sku=%21", {{"X-Request-Id", "r-3"}}), 400, "r-3");
  CHECK(bad["error"].get<std::string>().find("sku") != std::string::npos);
  error_of(conn.get("/nowhere", {{"X-Request-Id", "r-4"}}), 404, "r-4");
  error_of(conn.request("DELETE", offer_target("R5"), {{"X-Request-Id", "r-5"}}), 405, "r-5");
  // Without an X-Request-Id the gateway makes one, and the body says which.
  const auto made = conn.get("/nowhere");
  check_error(made, 404);
  CHECK_FALSE(made.header("x-request-id").value_or("").empty());
  CHECK(made.json()["request_id"] == made.header("x-request-id").value_or(""));
}

TEST_CASE("error answers: with the default error_detail a pass-through failure still says what failed",
          "[access][proxy]") {
  refused_port refused;
  gateway_process gw(
      "server:\n  listen: 127.0.0.1:0\n  threads: 1\ndownstreams:\n  gone:\n    url: "
      "http://127.0.0.1:" +
      std::to_string(refused.port()) +
      "\n    circuit_breaker: {enabled: false}\nroutes:\n  - path_prefix: /raw/\n    proxy:\n"
      "      downstream: gone\n");
  const auto body = error_of(http_get(gw.port(), "/raw/x", {{"X-Request-Id", "f-1"}}), 502, "f-1");
  CHECK(body["error"] != "upstream failure");
  CHECK_FALSE(body["error"].get<std::string>().empty());
}

TEST_CASE("error answers: a connection refused beyond max_connections gets a request id too",
          "[access][shed]") {
  mock_downstream mock({"--delay", "2ms"});
  seed_config cfg{mock.url()};
  cfg.limits = "  max_connections: 1\n";
  gateway_process gw(cfg.yaml());
  http_connection held(gw.port());
  check_error(held.get("/warm-up"), 404);  // accepted and counted
  http_connection extra(gw.port());
  std::string received;
  CHECK(extra.wait_closed_by_peer(3s, &received));
  const auto shed = parse_raw_response(received);
  INFO("received: " << received);
  REQUIRE(shed.status == 503);
  const auto body = nlohmann::json::parse(shed.body, nullptr, false);
  REQUIRE(body.is_object());
  CHECK(body["error"] == "overloaded: too many connections");
  REQUIRE(body["request_id"].is_string());
  const std::string id = body["request_id"];
  CHECK(shed.head.find("\r\nX-Request-Id: " + id + "\r\n") != std::string::npos);
}
