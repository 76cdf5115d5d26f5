// Pass-through uploads against the clock: the request body must arrive within proxy.timeout (each gap
// within idle_timeout), and a client that trickles its body holds no pooled downstream connection while
// it does, so it cannot starve the other requests to that downstream.

#include "tests/integration/metric_scrape.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/processes.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

using steady = std::chrono::steady_clock;

// One I/O thread and two connections to the mock: two exchanges that each held one would leave none.
std::string slow_upload_config(const mock_downstream& mock) {
  return "server:\n  listen: 127.0.0.1:0\n  threads: 1\ndownstreams:\n  shop:\n    url: " + mock.url() +
         "\n    max_connections: 2\n" + R"(routes:
  - path_prefix: /shop/
    proxy:
      downstream: shop
      rewrite: /
      timeout: 3s
      idle_timeout: 2s
)";
}

// A client that sends a request head announcing `length` body bytes, `first` of them at once, then one
// byte a second until the gateway answers and closes; what it received and when.
struct slow_upload {
  slow_upload(std::uint16_t port, std::size_t length, std::size_t first)
      : started(steady::now()), thread([this, port, length, first] { run(port, length, first); }) {}
  ~slow_upload() {
    if (thread.joinable()) thread.join();
  }
  void run(std::uint16_t port, std::size_t length, std::size_t first) {
    http_connection c(port, 10000ms);
    c.send_raw("POST /shop/__sink HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(length) +
               "\r\n\r\n" + std::string(first, 'f'));
    for (std::size_t sent = first; sent < length; ++sent) {
      try {
        c.send_raw("x");
      } catch (const http_error&) {
        break;  // the gateway has closed
      }
      if (c.wait_closed_by_peer(1000ms, &received) || steady::now() - started > 10s) break;
    }
    if (received.empty()) c.wait_closed_by_peer(1000ms, &received);
    ended = steady::now();
  }
  std::string status_line() const { return received.substr(0, received.find("\r\n")); }

  steady::time_point started;
  steady::time_point ended{};
  std::string received;
  std::thread thread;
};

}  // namespace

TEST_CASE("proxy: two clients trickling small bodies leave the pool free and are cut at proxy.timeout",
          "[proxy][limits]") {
  mock_downstream mock;
  gateway_process gw(slow_upload_config(mock));
  REQUIRE(http_get(gw.port(), "/shop/coupon?sku=1").status == 200);
  {
    slow_upload first(gw.port(), 100, 1);
    slow_upload second(gw.port(), 100, 1);
    std::this_thread::sleep_for(1200ms);  // both are uploading: in the old code each held a connection
    const auto asked = steady::now();
    const auto r = http_get(gw.port(), "/shop/coupon?sku=2", {}, 5000ms);
    CHECK(r.status == 200);
    CHECK(steady::now() - asked < 1500ms);
    first.thread.join();
    second.thread.join();
    for (const auto* u : {&first, &second}) {
      INFO(u->received);
      CHECK(u->status_line() == "HTTP/1.1 408 Request Timeout");
      CHECK(u->received.find("proxy.timeout") != std::string::npos);
      // Cut at the 3 s timeout (counted from the request's head), not later.
      CHECK(u->ended - u->started >= 2500ms);
      CHECK(u->ended - u->started < 5000ms);
    }
  }
  // The small bodies never reached the downstream: its only exchanges were the two GETs.
  CHECK(metric(gw, "gateway_downstream_calls_total", {{"downstream", "shop"}}) == 2);
}

TEST_CASE("proxy: a large body that stalls is cut at proxy.timeout and its connection given up",
          "[proxy][limits]") {
  mock_downstream mock;
  gateway_process gw(slow_upload_config(mock));
  {
    // More than the exchange's buffer holds: streamed to the downstream as it comes, then a trickle.
    slow_upload large(gw.port(), 1024 * 1024, 256 * 1024);
    large.thread.join();
    INFO(large.received);
    CHECK(large.status_line() == "HTTP/1.1 408 Request Timeout");
    CHECK(large.ended - large.started >= 2500ms);
    CHECK(large.ended - large.started < 5000ms);
  }
  // Both connections are free again.
  http_connection a(gw.port());
  http_connection b(gw.port());
  CHECK(a.get("/shop/coupon?sku=3").status == 200);
  CHECK(b.get("/shop/coupon?sku=4").status == 200);
}

TEST_CASE("proxy: a body that stops for idle_timeout gets 408 at once", "[proxy][limits]") {
  mock_downstream mock;
  auto config = slow_upload_config(mock);
  config.replace(config.find("idle_timeout: 2s"), 16, "idle_timeout: 500ms");
  gateway_process gw(config);
  http_connection c(gw.port());
  const auto started = steady::now();
  c.send_raw("POST /shop/__sink HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc");
  std::string received;
  CHECK(c.wait_closed_by_peer(3000ms, &received));
  INFO(received);
  CHECK(received.rfind("HTTP/1.1 408 Request Timeout\r\n", 0) == 0);
  CHECK(received.find("proxy.idle_timeout") != std::string::npos);
  CHECK(steady::now() - started < 2500ms);
}

TEST_CASE("proxy: max_body_bytes has a default limit, and 0 lifts it", "[proxy][limits]") {
  mock_downstream mock;
  gateway_process gw(slow_upload_config(mock));
  http_connection c(gw.port());
  c.send_raw("POST /shop/__sink HTTP/1.1\r\nHost: x\r\nContent-Length: 17179869184\r\n\r\n");
  auto r = c.read_response();
  CHECK(r.status == 413);
  auto unlimited = slow_upload_config(mock) + "      max_body_bytes: 0\n";
  gateway_process open(unlimited);
  http_connection d(open.port());
  d.send_raw("POST /shop/__sink HTTP/1.1\r\nHost: x\r\nContent-Length: 17179869184\r\n\r\nxyz");
  std::string received;
  d.wait_closed_by_peer(500ms, &received);
  CHECK(received.find(" 413 ") == std::string::npos);  // streaming, not refused
}
