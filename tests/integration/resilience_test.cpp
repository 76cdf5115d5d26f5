// Resilience per downstream, against the real gateway and mock: the circuit breaker opens on a hung
// downstream (answers stop waiting for the deadline), recovers through half-open probes, and says so in
// metrics, logs and X-Degraded; what a client sees for each outcome of a required call.

#include "tests/integration/metric_scrape.hpp"
#include "tests/support/loopback_socket.hpp"
#include "tests/support/offer_checks.hpp"
#include "tests/support/prometheus_text.hpp"
#include "tests/support/scripted_downstream.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

using steady = std::chrono::steady_clock;

// A breaker that opens after three failures in a row and probes again after one second.
const std::string quick_breaker =
    "    circuit_breaker: {consecutive_failures: 3, cooldown: 1s, half_open_calls: 2}\n";

}  // namespace

TEST_CASE(
    "breaker: a hung downstream's circuit opens, answers stop waiting for the deadline, probes close it",
    "[resilience][breaker]") {
  mock_downstream mock({"--delay", "5ms", "--path", "coupon=hang"});
  seed_config cfg{mock.url()};
  cfg.deadline = "300ms";
  cfg.downstream_extra = quick_breaker;
  gateway_process gw(cfg.yaml());

  CHECK(metric(gw, "gateway_circuit_state", {{"downstream", "coupon"}}) == 0);
  for (int i = 0; i < 3; ++i) {
    auto res = http_get(gw.port(), offer_target("B" + std::to_string(i)));
    check_offer(res, "B" + std::to_string(i), {"coupon"});
    CHECK(res.degraded_reason("coupon") == "timeout");
  }
  CHECK(metric(gw, "gateway_circuit_state", {{"downstream", "coupon"}}) == 2);
  CHECK(metric(gw, "gateway_circuit_transitions_total", {{"downstream", "coupon"}, {"to", "open"}}) == 1);
  CHECK(metric(gw, "gateway_circuit_state", {{"downstream", "inventory"}}) == 0);
  const auto coupon_calls = mock.path_counter(mock.stats(), "coupon", "requests");

  // Open: the call falls back at once, without reaching the downstream.
  for (int i = 0; i < 5; ++i) {
    const auto start = steady::now();
    auto res = http_get(gw.port(), offer_target("O" + std::to_string(i)));
    const auto took = steady::now() - start;
    check_offer(res, "O" + std::to_string(i), {"coupon"});
    CHECK(res.degraded_reason("coupon") == "circuit_open");
    CHECK(took < 200ms);  // the deadline is 300 ms; the healthy calls take about 5 ms
  }
  CHECK(mock.path_counter(mock.stats(), "coupon", "requests") == coupon_calls);
  CHECK(metric(gw, "gateway_downstream_calls_total",
               {{"downstream", "coupon"}, {"outcome", "circuit_open"}}) == 5);

  // Recovered: after the cooldown two probe calls go through and close the circuit.
  mock.set_mode("coupon", "ok");
  std::this_thread::sleep_for(1100ms);
  check_offer(http_get(gw.port(), offer_target("P1")), "P1");
  CHECK(metric(gw, "gateway_circuit_state", {{"downstream", "coupon"}}) == 1);
  check_offer(http_get(gw.port(), offer_target("P2")), "P2");
  CHECK(metric(gw, "gateway_circuit_state", {{"downstream", "coupon"}}) == 0);
  CHECK(metric(gw, "gateway_circuit_transitions_total", {{"downstream", "coupon"}, {"to", "half_open"}}) ==
        1);
  CHECK(metric(gw, "gateway_circuit_transitions_total", {{"downstream", "coupon"}, {"to", "closed"}}) == 1);
  check_offer(http_get(gw.port(), offer_target("C1")), "C1");

  // Each transition logged once.
  const auto log = gw.process().stderr_text();
  const auto count = [&](const std::string& text) {
    std::size_t n = 0;
    for (auto at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++n;
    return n;
  };
  CHECK(count("circuit of downstream 'coupon' opened: 3 failures in a row") == 1);
  CHECK(count("circuit of downstream 'coupon' half-open") == 1);
  CHECK(count("circuit of downstream 'coupon' closed") == 1);
}

TEST_CASE("breaker: a probe that fails opens the circuit again", "[resilience][breaker]") {
  mock_downstream mock({"--delay", "5ms", "--path", "coupon=fail"});
  seed_config cfg{mock.url()};
  cfg.downstream_extra = quick_breaker;
  gateway_process gw(cfg.yaml());

  for (int i = 0; i < 3; ++i) check_offer(http_get(gw.port(), offer_target("F")), "F", {"coupon"});
  REQUIRE(metric(gw, "gateway_circuit_state", {{"downstream", "coupon"}}) == 2);
  std::this_thread::sleep_for(1100ms);
  auto probe = http_get(gw.port(), offer_target("F"));
  CHECK(probe.degraded_reason("coupon") == "error");
  CHECK(metric(gw, "gateway_circuit_state", {{"downstream", "coupon"}}) == 2);
  CHECK(metric(gw, "gateway_circuit_transitions_total", {{"downstream", "coupon"}, {"to", "open"}}) == 2);
  CHECK(http_get(gw.port(), offer_target("F")).degraded_reason("coupon") == "circuit_open");
}

TEST_CASE("breaker: a required call refused by an open circuit answers 503", "[resilience][breaker]") {
  mock_downstream mock({"--delay", "5ms", "--path", "coupon=fail"});
  seed_config cfg{mock.url()};
  cfg.downstream_extra = quick_breaker;
  cfg.required_calls = {"coupon"};
  gateway_process gw(cfg.yaml());

  for (int i = 0; i < 3; ++i) CHECK(http_get(gw.port(), offer_target("R")).status == 502);
  auto res = http_get(gw.port(), offer_target("R"));
  CHECK(res.status == 503);
  CHECK(res.body.find("required call 'coupon' failed: circuit open") != std::string::npos);
}

TEST_CASE("breaker: enabled: false keeps calling a failing downstream", "[resilience][breaker]") {
  mock_downstream mock({"--delay", "5ms", "--path", "coupon=fail"});
  seed_config cfg{mock.url()};
  cfg.downstream_extra = "    circuit_breaker: {enabled: false, consecutive_failures: 1}\n";
  gateway_process gw(cfg.yaml());

  for (int i = 0; i < 6; ++i) {
    CHECK(http_get(gw.port(), offer_target("E")).degraded_reason("coupon") == "error");
  }
  CHECK(mock.path_counter(mock.stats(), "coupon", "requests") == 6);
  const auto page = parse_exposition(http_get(gw.admin_port(), "/metrics").body);
  CHECK(total(page, "gateway_circuit_state", {{"downstream", "coupon"}}) == 0);
  CHECK(page.types.count("gateway_circuit_state") == 0);  // no downstream has a breaker
}

TEST_CASE("outcomes: a required call's failure answers 504 on timeout, 502 on error", "[resilience]") {
  mock_downstream mock({"--delay", "5ms", "--path", "coupon=hang", "--path", "channel-price=fail"});
  seed_config cfg{mock.url()};
  cfg.deadline = "200ms";
  cfg.downstream_extra = "    circuit_breaker: {enabled: false}\n";
  SECTION("timeout") {
    cfg.required_calls = {"coupon"};
    gateway_process gw(cfg.yaml());
    CHECK(http_get(gw.port(), offer_target("T")).status == 504);
  }
  SECTION("error") {
    cfg.required_calls = {"channel-price"};
    gateway_process gw(cfg.yaml());
    CHECK(http_get(gw.port(), offer_target("T")).status == 502);
  }
}

TEST_CASE("breaker: a downstream's 4xx answers to clients never open its circuit", "[resilience][breaker]") {
  // A downstream that answers 401 to every request (a bad token, say): the client's fault, not the
  // downstream's, so no number of them may take the downstream away from other clients.
  scripted_downstream auth([](const scripted_downstream::request&) {
    return std::vector<scripted_downstream::piece>{
        {"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nWWW-Authenticate: Bearer\r\n"
         "Content-Length: 24\r\n\r\n{\"error\":\"unauthorized\"}"}};
  });
  gateway_process gw("server:\n  listen: 127.0.0.1:0\n  threads: 1\ndownstreams:\n  price:\n    url: " +
                     auth.url() + "\n" + quick_breaker + R"(routes:
  - path: /p
    response: object
    calls:
      - {name: price, downstream: price, path: /price, fallback: {price: -1}}
)");
  for (int i = 0; i < 10; ++i) {
    const auto res = http_get(gw.port(), "/p");
    CHECK(res.status == 200);
    CHECK(res.degraded_reason("price") == "error");
  }
  CHECK(metric(gw, "gateway_circuit_state", {{"downstream", "price"}}) == 0);
  CHECK(metric(gw, "gateway_circuit_transitions_total", {{"downstream", "price"}, {"to", "open"}}) == 0);
  CHECK(auth.requests().size() == 10);  // every call reached the downstream
}

namespace {

// A downstream that answers 429 (too many requests) to every call, on a port of its own.
scripted_downstream::script always_429() {
  return [](const scripted_downstream::request&) {
    return std::vector<scripted_downstream::piece>{
        {"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
         "Content-Length: 2\r\n\r\n{}"}};
  };
}

// Two endpoints that answer 429, balanced, with outlier ejection and breakers that react after a few
// failures in a row; `failures`: the circuit_breaker's list, or empty for its default.
std::string endpoints_429_config(const scripted_downstream& a, const scripted_downstream& b,
                                 const std::string& failures) {
  return "server:\n  listen: 127.0.0.1:0\n  threads: 1\ndownstreams:\n  price:\n    url: " + a.url() +
         "\n    endpoints: [127.0.0.1:" + std::to_string(a.port()) +
         ", 127.0.0.1:" + std::to_string(b.port()) +
         "]\n    retry: {attempts: 1}\n    outlier_ejection: {consecutive_failures: 2}\n"
         "    circuit_breaker: {consecutive_failures: 4, cooldown: 30s" +
         (failures.empty() ? "" : ", failures: " + failures) + R"(}
routes:
  - path: /p
    response: object
    calls:
      - {name: price, downstream: price, path: /price, fallback: {price: -1}}
)";
}

double sum_of(const gateway_process& gw, const std::string& family) {
  return total(parse_exposition(http_get(gw.admin_port(), "/metrics").body), family);
}

}  // namespace

TEST_CASE(
    "breaker: what counts as a failure is the failures list, for the downstream's breaker, its "
    "endpoints' breakers and outlier ejection alike",
    "[resilience][breaker][balancing]") {
  scripted_downstream a(always_429());
  scripted_downstream b(always_429());
  SECTION("by default a 429 is the client's answer: nothing opens, no endpoint is ejected") {
    gateway_process gw(endpoints_429_config(a, b, ""));
    for (int i = 0; i < 12; ++i) CHECK(http_get(gw.port(), "/p").degraded_reason("price") == "error");
    CHECK(metric(gw, "gateway_circuit_transitions_total", {{"downstream", "price"}, {"to", "open"}}) == 0);
    CHECK(sum_of(gw, "gateway_endpoint_circuit_transitions_total") == 0);
    CHECK(metric(gw, "gateway_endpoint_ejections_total", {{"downstream", "price"}}) == 0);
    CHECK(a.requests().size() + b.requests().size() == 12);
  }
  SECTION("listed, a 429 counts everywhere") {
    gateway_process gw(endpoints_429_config(a, b, "[connect, timeout, 5xx, 429]"));
    for (int i = 0; i < 12; ++i) (void)http_get(gw.port(), "/p");
    CHECK(metric(gw, "gateway_circuit_transitions_total", {{"downstream", "price"}, {"to", "open"}}) == 1);
    // (An endpoint's breaker is fed the same verdict as its ejection, in http_endpoints::attempt_ended; with
    // two endpoints sharing the calls, the downstream's own breaker opens first here.)
    CHECK(metric(gw, "gateway_endpoint_ejections_total", {{"downstream", "price"}}) >= 1);
    CHECK(http_get(gw.port(), "/p").degraded_reason("price") == "circuit_open");
    CHECK(a.requests().size() + b.requests().size() < 12);
  }
}

TEST_CASE("connect ramp: a burst of calls to an endpoint keeps at most max_connecting connects in flight",
          "[resilience][pool]") {
  // A downstream that never accepts, with the shortest listen backlog: past the first connection or
  // two, every SYN it gets is dropped, so each connect the gateway starts stays in SYN-SENT, where the
  // kernel's table shows it. Forty clients at once: without the ramp, forty connects at once.
  const loopback_socket listener(0);
  const auto port = listener.port();

  gateway_process gw(
      "server:\n  listen: 127.0.0.1:0\n  threads: 1\nlimits:\n  max_inflight: 100\n"
      "downstreams:\n  dead:\n    url: http://127.0.0.1:" +
      std::to_string(port) +
      "\n    connect_timeout: 5s\n    max_connecting: 4\n    retry: {attempts: 1}\n"
      "    circuit_breaker: {enabled: false}\n" +
      R"(routes:
  - path: /d
    deadline: 1500ms
    response: object
    calls:
      - {name: dead, downstream: dead, path: /x, fallback: {x: 0}}
)");
  // Connects to `port` in SYN-SENT, from the kernel's table of IPv4 sockets.
  char wanted[8];
  std::snprintf(wanted, sizeof wanted, ":%04X", port);
  const auto syn_sent = [&] {
    std::ifstream table("/proc/net/tcp");
    std::string line;
    std::getline(table, line);  // the header
    int n = 0;
    while (std::getline(table, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      if (remote.ends_with(wanted) && state == "02") ++n;
    }
    return n;
  };
  std::atomic<int> degraded{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 40; ++i) {
    clients.emplace_back([&] {
      const auto r = http_get(gw.port(), "/d", {}, 5000ms);
      if (r.status == 200 && r.degraded_reason("dead") == "timeout") ++degraded;
    });
  }
  int most = 0;
  for (const auto until = steady::now() + 1200ms; steady::now() < until;) {
    most = std::max(most, syn_sent());
    std::this_thread::sleep_for(20ms);
  }
  for (auto& t : clients) t.join();
  INFO("most connects in SYN-SENT at once: " << most);
  CHECK(most >= 1);
  CHECK(most <= 4);
  CHECK(degraded == 40);  // every call waited its turn and ended at the deadline, as a timeout
}
