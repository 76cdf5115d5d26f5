// Pass-through routes (`proxy:`), against the real gateway and mock: what goes to the downstream (method,
// rewritten path, query, fields, bodies of either framing), what comes back (status, fields, bodies of any
// size through fixed buffers, chunked and interim answers), failures answered by the gateway, and a client
// that leaves.

#include "tests/integration/metric_scrape.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/processes.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

std::string proxy_config(const mock_downstream& mock, const std::string& proxy_extra = "",
                         const std::string& route_extra = "") {
  return "server:\n  listen: 127.0.0.1:0\n  threads: 2\ndownstreams:\n  shop:\n    url: " + mock.url() +
         "\n    max_connections: 8\n" + R"(routes:
  - path_prefix: /shop/
    proxy:
      downstream: shop
      rewrite: /
)" + proxy_extra +
         route_extra + R"(  - path: /agg
    calls:
      - {name: coupon, downstream: shop, path: '/coupon?sku=1'}
)";
}

nlohmann::json last(mock_downstream& mock, const std::string& path) {
  return mock.stats()["paths"][path]["last_headers"];
}

// The gateway's peak resident memory so far, in KiB.
long peak_rss_kib(gateway_process& gw) {
  std::ifstream status("/proc/" + std::to_string(gw.process().pid()) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

}  // namespace

TEST_CASE("proxy: method, rewritten path, query, client fields and bodies go to the downstream", "[proxy]") {
  mock_downstream mock({"--record-headers", "x-forwarded-for,x-custom,x-hop,x-drop,x-api-key,x-request-id"});
  gateway_process gw(proxy_config(mock, "", R"(    headers:
      set: {X-Api-Key: k-123}
      remove: [X-Drop]
)"));
  http_connection client(gw.port());
  auto r = client.request("GET", "/shop/coupon?sku=77",
                          {{"X-Custom", "yes"},
                           {"X-Hop", "h"},
                           {"Connection", "X-Hop"},
                           {"X-Drop", "d"},
                           {"X-Request-Id", "req-42"}});
  REQUIRE(r.status == 200);
  CHECK(r.json()["sku"] == "77");
  CHECK(r.header("X-Request-Id") == "req-42");
  auto seen = last(mock, "coupon");
  CHECK(seen["@method"] == "GET");
  CHECK(seen["x-custom"] == "yes");
  CHECK(seen["x-forwarded-for"] == "127.0.0.1");
  CHECK(seen["x-api-key"] == "k-123");
  CHECK(seen["x-request-id"] == "req-42");
  CHECK_FALSE(seen.contains("x-hop"));   // named by Connection: hop-by-hop
  CHECK_FALSE(seen.contains("x-drop"));  // removed by the route's policy

  // A body with a length, then a chunked one, on the same client connection.
  r = client.request("POST", "/shop/coupon?sku=78", {{"Content-Type", "application/json"}}, R"({"q":1})");
  CHECK(r.status == 200);
  CHECK(last(mock, "coupon")["@body"] == R"({"q":1})");
  client.send_raw(
      "PUT /shop/coupon?sku=79 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "4\r\n{\"a\"\r\n3\r\n:2}\r\n0\r\n\r\n");
  r = client.read_response();
  CHECK(r.status == 200);
  seen = last(mock, "coupon");
  CHECK(seen["@method"] == "PUT");
  CHECK(seen["@body"] == R"({"a":2})");

  // The downstream connection is reused: five more requests open none (the second look at the stats
  // is one connection of its own).
  const auto opened = mock.endpoint_counter(mock.stats(), mock.port(), "connections_total");
  for (int i = 0; i < 5; ++i) CHECK(client.get("/shop/coupon?sku=80").status == 200);
  CHECK(mock.endpoint_counter(mock.stats(), mock.port(), "connections_total") == opened + 1);
  CHECK(http_get(gw.port(), "/agg").status == 200);  // the aggregate route beside it
  CHECK(metric(gw, "http_server_request_duration_seconds_count",
               {{"http_route", "/shop/"},
                {"http_request_method", "PUT"},
                {"http_response_status_code", "200"}}) == 1);
}

TEST_CASE("proxy: bodies of any size stream through fixed buffers, both ways", "[proxy]") {
  mock_downstream mock;
  gateway_process gw(proxy_config(mock, "      max_body_bytes: 0\n"));
  constexpr std::size_t mib = 1024 * 1024;
  constexpr std::size_t total = 192 * mib;
  const long before = peak_rss_kib(gw);
  REQUIRE(before > 0);

  SECTION("upload with a Content-Length, and chunked") {
    http_connection client(gw.port(), 10000ms);
    const std::string piece(mib, 'u');
    client.send_raw("POST /shop/__sink HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(total) +
                    "\r\n\r\n");
    for (std::size_t sent = 0; sent < total; sent += piece.size()) client.send_raw(piece, 10000ms);
    auto r = client.read_response(20000ms);
    REQUIRE(r.status == 200);
    CHECK(r.json()["received"] == total);
    client.send_raw("PUT /shop/__sink HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (std::size_t sent = 0; sent < total; sent += piece.size())
      client.send_raw("100000\r\n" + piece + "\r\n", 10000ms);
    client.send_raw("0\r\n\r\n");
    r = client.read_response(20000ms);
    REQUIRE(r.status == 200);
    CHECK(r.json()["received"] == total);
    CHECK(r.json()["method"] == "PUT");
  }
  SECTION("download with a Content-Length, and chunked") {
    http_connection client(gw.port(), 10000ms);
    auto r = client.request("GET", "/shop/__bytes?n=" + std::to_string(total), {}, {}, 30000ms);
    REQUIRE(r.status == 200);
    CHECK(r.body.size() == total);
    CHECK(r.header("Content-Length") == std::to_string(total));
    r = client.request("GET", "/shop/__bytes?chunked=1&n=" + std::to_string(total / 4), {}, {}, 30000ms);
    REQUIRE(r.status == 200);
    CHECK(r.body.size() == total / 4);
    CHECK(r.header("Transfer-Encoding") == "chunked");
  }
  CHECK(metric(gw, "gateway_proxy_bytes_total", {{"http_route", "/shop/"}, {"direction", "request"}}) +
            metric(gw, "gateway_proxy_bytes_total", {{"http_route", "/shop/"}, {"direction", "response"}}) >=
        static_cast<double>(total));
  // Nothing near the body's size was held: the peak grew by far less than what went through.
  const long after = peak_rss_kib(gw);
  INFO("peak RSS before " << before << " KiB, after " << after << " KiB");
  CHECK(after - before < static_cast<long>(32 * 1024));
}

TEST_CASE("proxy: chunked, interim and bodiless answers keep their meaning", "[proxy]") {
  mock_downstream mock;
  gateway_process gw(proxy_config(mock));
  mock.set_mode("coupon", "chunked");
  http_connection client(gw.port());
  auto r = client.get("/shop/coupon?sku=5");
  REQUIRE(r.status == 200);
  CHECK(r.header("Transfer-Encoding") == "chunked");
  CHECK(r.json()["sku"] == "5");

  // An HTTP/1.0 client gets the same body, delimited by the close.
  http_connection old(gw.port());
  old.send_raw("GET /shop/coupon?sku=6 HTTP/1.0\r\n\r\n");
  std::string raw;
  CHECK(old.wait_closed_by_peer(3000ms, &raw));
  CHECK(raw.find("Transfer-Encoding") == std::string::npos);
  CHECK(raw.find("\"sku\":\"6\"") != std::string::npos);

  // A 103 reaches an HTTP/1.1 client before the final answer.
  mock.set_mode("coupon", "interim");
  http_connection hints(gw.port());
  hints.send_raw("GET /shop/coupon?sku=7 HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string received;
  hints.wait_closed_by_peer(1500ms, &received);
  CHECK(received.rfind("HTTP/1.1 103 ", 0) == 0);
  CHECK(received.find("HTTP/1.1 200 OK") != std::string::npos);
}

TEST_CASE("proxy: a failing downstream gets the gateway answer and 100-continue is answered", "[proxy]") {
  mock_downstream mock;
  gateway_process gw(proxy_config(mock, "      timeout: 300ms\n"));
  SECTION("no answer within proxy.timeout: 504") {
    mock.set_mode("coupon", "hang");
    const auto started = std::chrono::steady_clock::now();
    const auto r = http_get(gw.port(), "/shop/coupon?sku=1");
    CHECK(r.status == 504);
    CHECK(std::chrono::steady_clock::now() - started < 300ms + 1500ms);
  }
  SECTION("a reset: 502") {
    mock.set_mode("coupon", "reset");
    CHECK(http_get(gw.port(), "/shop/coupon?sku=1").status == 502);
  }
  SECTION("Expect: 100-continue is answered once the downstream has the head") {
    // The body counts against proxy.timeout: this client takes a second to send it.
    gateway_process patient(proxy_config(mock, "      timeout: 5s\n"));
    http_connection client(patient.port());
    client.send_raw(
        "POST /shop/__sink HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
    std::string received;
    CHECK_FALSE(client.wait_closed_by_peer(1000ms, &received));
    CHECK(received == "HTTP/1.1 100 Continue\r\n\r\n");
    client.send_raw("hello");
    const auto r = client.read_response();
    CHECK(r.status == 200);
    CHECK(r.json()["received"] == 5);
  }
  SECTION("a downstream that answers before it has read the body: its answer reaches the client") {
    // The mock refuses a Content-Length over 64 KiB with 413 from the head, and closes.
    http_connection client(gw.port());
    client.send_raw("POST /shop/coupon?sku=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 4194304\r\n\r\n");
    const std::string piece(64 * 1024, 'b');
    try {
      for (int i = 0; i < 64; ++i) client.send_raw(piece, 2000ms);
    } catch (const http_error&) {
      // the gateway closed its side after answering: expected once the answer is out
    }
    const auto r = client.read_response();
    CHECK(r.status == 413);
    CHECK(r.header("Connection") == "close");
  }
  SECTION("a refused downstream: 502") {
    refused_port closed;
    gateway_process other(
        "server:\n  listen: 127.0.0.1:0\ndownstreams:\n  gone:\n    url: http://127.0.0.1:" +
        std::to_string(closed.port()) + "\nroutes:\n  - path_prefix: /\n    proxy: {downstream: gone}\n");
    const auto r = http_get(other.port(), "/anything");
    CHECK(r.status == 502);
    CHECK(r.json()["error"].get<std::string>().find("connect") != std::string::npos);
  }
}

TEST_CASE("proxy: a client that leaves cancels the downstream exchange", "[proxy]") {
  mock_downstream mock;
  gateway_process gw(proxy_config(mock));
  mock.set_mode("coupon", "hang");
  {
    http_connection client(gw.port());
    client.send_raw("GET /shop/coupon?sku=1 HTTP/1.1\r\nHost: x\r\n\r\n");
    mock.wait_stats([&](const nlohmann::json& s) { return mock.path_counter(s, "coupon", "requests") == 1; });
  }  // closed
  const auto stats = mock.wait_stats(
      [&](const nlohmann::json& s) { return mock.path_counter(s, "coupon", "cancelled") == 1; }, 3000ms);
  CHECK(mock.path_counter(stats, "coupon", "cancelled") == 1);
  CHECK(settled_metric(
            gw, "http_server_request_duration_seconds_count",
            {{"http_route", "/shop/"}, {"http_request_method", "GET"}, {"http_response_status_code", "499"}},
            1) == 1);
  CHECK(metric(gw, "gateway_downstream_calls_total", {{"downstream", "shop"}, {"outcome", "cancelled"}}) ==
        1);
}

TEST_CASE("proxy: each exchange is counted once in its downstream's call metrics by the kind of its outcome",
          "[proxy][metrics]") {
  mock_downstream mock;
  refused_port closed;
  auto config = proxy_config(mock, "      timeout: 300ms\n");
  config.replace(config.find("routes:\n"), 8,
                 "  gone:\n    url: http://127.0.0.1:" + std::to_string(closed.port()) +
                     "\nroutes:\n  - path_prefix: /gone/\n    proxy: {downstream: gone}\n");
  gateway_process gw(config);
  const auto calls = [&](const std::string& downstream, const std::string& outcome) {
    return metric(gw, "gateway_downstream_calls_total", {{"downstream", downstream}, {"outcome", outcome}});
  };
  CHECK(http_get(gw.port(), "/shop/coupon?sku=1").status == 200);
  mock.set_mode("coupon", "unavailable");
  CHECK(http_get(gw.port(), "/shop/coupon?sku=1").status == 503);  // the downstream's own answer
  mock.set_mode("coupon", "reset");
  CHECK(http_get(gw.port(), "/shop/coupon?sku=1").status == 502);
  mock.set_mode("coupon", "hang");
  CHECK(http_get(gw.port(), "/shop/coupon?sku=1").status == 504);
  CHECK(http_get(gw.port(), "/gone/x").status == 502);

  CHECK(calls("shop", "ok") == 1);
  CHECK(calls("shop", "status_5xx") == 1);
  CHECK(calls("shop", "reset") == 1);  // one count, though a reused connection is tried once more
  CHECK(calls("shop", "timeout") == 1);
  CHECK(calls("gone", "refused") == 1);
  CHECK(metric(gw, "gateway_downstream_calls_total", {{"downstream", "shop"}}) == 4);
  CHECK(metric(gw, "gateway_downstream_calls_total", {{"downstream", "gone"}}) == 1);
  CHECK(metric(gw, "http_client_request_duration_seconds_count",
               {{"downstream", "gone"}, {"outcome", "refused"}, {"error_type", "refused"}}) == 1);
}

TEST_CASE("proxy: the downstream's circuit breaker judges exchanges, open, it answers 503 without a request",
          "[proxy][breaker]") {
  mock_downstream mock;
  // The shop downstream gets a breaker that opens after three failures in a row.
  auto config = proxy_config(mock);
  const std::string at = "    max_connections: 8\n";
  config.replace(config.find(at), at.size(),
                 at + "    circuit_breaker: {consecutive_failures: 3, cooldown: 30s, half_open_calls: 1}\n");
  gateway_process gw(config);
  mock.set_mode("coupon", "unavailable");  // 503 answers: failures, relayed as they are
  for (int i = 0; i < 3; ++i) CHECK(http_get(gw.port(), "/shop/coupon?sku=1").status == 503);
  // The breaker judges an exchange once it has ended, just after the client has the answer relayed.
  CHECK(settled_metric(gw, "gateway_circuit_state", {{"downstream", "shop"}}, 2) == 2);
  const auto calls = mock.path_counter(mock.stats(), "coupon", "requests");
  const auto r = http_get(gw.port(), "/shop/coupon?sku=1");
  CHECK(r.status == 503);
  CHECK(r.json()["error"].get<std::string>().find("circuit open") != std::string::npos);
  CHECK(mock.path_counter(mock.stats(), "coupon", "requests") == calls);
  CHECK(metric(gw, "gateway_downstream_calls_total", {{"downstream", "shop"}, {"outcome", "circuit_open"}}) ==
        1);
}
