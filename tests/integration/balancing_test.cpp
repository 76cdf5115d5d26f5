// Client-side balancing across a downstream's endpoints (one mock process listening on three ports):
// calls spread over them, a failing endpoint is ejected and comes back, and retries go to another one.

#include "tests/integration/metric_scrape.hpp"
#include "tests/support/offer_checks.hpp"

#include <chrono>
#include <string>
#include <thread>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

// Every downstream of the seed config balanced over the mock's endpoints, plus `extra` lines.
std::string balanced_config(const mock_downstream& mock, const std::string& extra = "",
                            const std::string& dead_endpoint = "") {
  seed_config cfg{mock.url()};
  std::string list;
  for (auto port : mock.ports())
    list += (list.empty() ? "" : ", ") + std::string("127.0.0.1:") + std::to_string(port);
  if (!dead_endpoint.empty()) list += ", " + dead_endpoint;
  cfg.downstream_extra = "    endpoints: [" + list + "]\n" + extra;
  return cfg.yaml();
}

long long coupon_on(mock_downstream& mock, std::uint16_t port) {
  return mock.endpoint_counter(mock.stats(), port, "requests", "coupon");
}

void send(const gateway_process& gw, int n, const std::string& prefix,
          std::vector<std::string> degraded = {}) {
  for (int i = 0; i < n; ++i) {
    const auto sku = prefix + std::to_string(i);
    check_offer(http_get(gw.port(), offer_target(sku)), sku, degraded);
  }
}

}  // namespace

TEST_CASE("balancing: calls spread over every endpoint", "[resilience][balancing]") {
  mock_downstream mock(3, {"--delay", "2ms"});
  gateway_process gw(balanced_config(mock));
  send(gw, 90, "B");
  for (auto port : mock.ports()) {
    INFO("endpoint " << port);
    CHECK(coupon_on(mock, port) >= 12);  // 30 expected of 90
  }
  CHECK(metric(gw, "gateway_downstream_endpoints", {{"downstream", "coupon"}}) == 3);
}

TEST_CASE("balancing: a failing endpoint is ejected, and comes back once it has served its time",
          "[resilience][balancing]") {
  mock_downstream mock(3, {"--delay", "2ms"});
  const auto bad = mock.ports()[1];
  gateway_process gw(
      balanced_config(mock, "    outlier_ejection: {consecutive_failures: 3, base_time: 2s}\n"));
  mock.control("coupon", "fail", "", bad);

  // Until each I/O thread has seen three failures in a row from it, some answers are degraded.
  for (int i = 0; i < 60; ++i) (void)http_get(gw.port(), offer_target("E" + std::to_string(i)));
  CHECK(metric(gw, "gateway_endpoint_ejections_total", {{"downstream", "coupon"}}) >= 1);
  const auto seen = coupon_on(mock, bad);
  CHECK(seen >= 3);
  // Ejected: no call reaches it, and no answer is degraded.
  send(gw, 30, "F");
  CHECK(coupon_on(mock, bad) == seen);

  // Healthy again, it comes back after its ejection.
  mock.control("coupon", "ok", "", bad);
  std::this_thread::sleep_for(2100ms);
  send(gw, 60, "G");
  CHECK(coupon_on(mock, bad) > seen);
}

TEST_CASE("balancing: a retry goes to another endpoint, so a 503 from one costs no answer",
          "[resilience][balancing][retry]") {
  mock_downstream mock(3, {"--delay", "2ms"});
  const auto bad = mock.ports()[2];
  gateway_process gw(balanced_config(mock, "    outlier_ejection: {consecutive_failures: 0}\n"));
  mock.control("coupon", "unavailable", "", bad);
  send(gw, 40, "R");  // every answer whole: the 503s were retried elsewhere
  CHECK(coupon_on(mock, bad) >= 1);
  CHECK(metric(gw, "gateway_downstream_retries_total", {{"downstream", "coupon"}}) == coupon_on(mock, bad));
}

TEST_CASE("balancing: an endpoint that refuses connections is retried around and ejected",
          "[resilience][balancing][retry]") {
  mock_downstream mock(2, {"--delay", "2ms"});
  gateway_process gw(balanced_config(mock, "", "127.0.0.1:1"));  // nothing listens on port 1
  send(gw, 60, "D");
  CHECK(metric(gw, "gateway_downstream_endpoints", {{"downstream", "coupon"}}) == 3);
  CHECK(metric(gw, "gateway_endpoint_ejections_total", {{"downstream", "coupon"}}) >= 1);
}

TEST_CASE("balancing: an endpoint failing every other call opens its own breaker, and probes close it",
          "[resilience][balancing][breaker]") {
  mock_downstream mock(3, {"--delay", "2ms"});
  const auto bad = mock.ports()[0];
  const std::string bad_label = "127.0.0.1:" + std::to_string(bad);
  // Half its calls fail, never five in a row: outlier ejection (at its defaults) cannot see it, the
  // endpoint's breaker can. The 503s are retried on another endpoint, so no answer is degraded.
  gateway_process gw(balanced_config(
      mock, "    circuit_breaker: {min_calls: 8, failure_percent: 30, cooldown: 2s, half_open_calls: 2}\n"));
  mock.control("coupon", "flaky", "", bad);
  send(gw, 90, "P");
  REQUIRE(metric(gw, "gateway_endpoint_circuit_state", {{"downstream", "coupon"}, {"endpoint", bad_label}}) ==
          2);
  CHECK(metric(gw, "gateway_endpoint_circuit_transitions_total",
               {{"downstream", "coupon"}, {"endpoint", bad_label}, {"to", "open"}}) == 1);
  CHECK(metric(gw, "gateway_circuit_state", {{"downstream", "coupon"}}) == 0);  // the downstream's: closed
  for (auto port : {mock.ports()[1], mock.ports()[2]}) {
    const std::string label = "127.0.0.1:" + std::to_string(port);
    CHECK(metric(gw, "gateway_endpoint_circuit_state", {{"downstream", "coupon"}, {"endpoint", label}}) == 0);
  }
  // Open: no attempt reaches it.
  const auto seen = coupon_on(mock, bad);
  send(gw, 30, "Q");
  CHECK(coupon_on(mock, bad) == seen);

  // Healthy again: after the cooldown its probes succeed and close it; calls reach it again.
  mock.control("coupon", "ok", "", bad);
  std::this_thread::sleep_for(2100ms);
  send(gw, 60, "S");
  CHECK(coupon_on(mock, bad) > seen);
  CHECK(metric(gw, "gateway_endpoint_circuit_state", {{"downstream", "coupon"}, {"endpoint", bad_label}}) ==
        0);
  CHECK(metric(gw, "gateway_endpoint_circuit_transitions_total",
               {{"downstream", "coupon"}, {"endpoint", bad_label}, {"to", "closed"}}) == 1);
  CHECK(gw.process().stderr_text().find("circuit of endpoint " + bad_label +
                                        " of downstream 'coupon' opened") != std::string::npos);
}

TEST_CASE("balancing: with every endpoint's breaker open, calls fall back at once as circuit_open",
          "[resilience][balancing][breaker]") {
  mock_downstream mock(2, {"--delay", "2ms"});
  gateway_process gw(
      balanced_config(mock,
                      "    retry: {attempts: 1}\n"
                      "    outlier_ejection: {consecutive_failures: 0}\n"
                      "    circuit_breaker: {min_calls: 1000, consecutive_failures: 3, cooldown: 30s}\n"));
  mock.control("coupon", "unavailable");
  // The downstream's breaker needs 1000 calls; each endpoint's opens after 3 failures in a row.
  for (int i = 0; i < 20; ++i) (void)http_get(gw.port(), offer_target("O" + std::to_string(i)));
  const auto before = mock.path_counter(mock.stats(), "coupon", "requests");
  const auto r = http_get(gw.port(), offer_target("O-last"));
  check_offer(r, "O-last", {"coupon"});
  CHECK(r.header("X-Degraded").value_or("").find("coupon;reason=circuit_open") != std::string::npos);
  CHECK(mock.path_counter(mock.stats(), "coupon", "requests") == before);
}
