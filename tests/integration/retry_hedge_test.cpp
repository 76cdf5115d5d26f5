// Retries within the deadline and hedged requests, against the real gateway and mock: what is retried,
// that the second attempt's answer is served, that the budgets bound the extra calls, and that a hedge
// wins over a slow first attempt whose socket is then closed (the mock counts it cancelled).

#include "tests/integration/metric_scrape.hpp"
#include "tests/integration/sql_support.hpp"
#include "tests/support/offer_checks.hpp"
#include "tests/support/prometheus_text.hpp"

#include <chrono>
#include <string>
#include <vector>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

using steady = std::chrono::steady_clock;

long long coupon_counter(mock_downstream& mock, const std::string& counter) {
  return mock.path_counter(mock.stats(), "coupon", counter);
}

}  // namespace

TEST_CASE("retry: a 503 is retried within the deadline and the retry's answer is served",
          "[resilience][retry]") {
  mock_downstream mock({"--delay", "5ms", "--path", "coupon=flaky"});  // every other answer 503
  gateway_process gw(seed_config{mock.url()}.yaml());

  for (int i = 0; i < 5; ++i)
    check_offer(http_get(gw.port(), offer_target("R" + std::to_string(i))), "R" + std::to_string(i));
  CHECK(coupon_counter(mock, "requests") == 10);
  CHECK(metric(gw, "gateway_downstream_retries_total", {{"downstream", "coupon"}}) == 5);
  CHECK(metric(gw, "gateway_downstream_retries_total", {{"downstream", "inventory"}}) == 0);
}

TEST_CASE("retry: attempts: 1 turns retries off, a status not in on_status is not retried",
          "[resilience][retry]") {
  SECTION("attempts: 1") {
    mock_downstream mock({"--delay", "5ms", "--path", "coupon=flaky"});
    seed_config cfg{mock.url()};
    cfg.downstream_extra = "    retry: {attempts: 1}\n";
    gateway_process gw(cfg.yaml());
    auto first = http_get(gw.port(), offer_target("A"));
    check_offer(first, "A", {"coupon"});
    CHECK(first.degraded_reason("coupon") == "error");
    check_offer(http_get(gw.port(), offer_target("B")), "B");
    CHECK(coupon_counter(mock, "requests") == 2);
  }
  SECTION("a 500") {
    mock_downstream mock({"--delay", "5ms", "--path", "coupon=fail"});
    gateway_process gw(seed_config{mock.url()}.yaml());
    check_offer(http_get(gw.port(), offer_target("C")), "C", {"coupon"});
    CHECK(coupon_counter(mock, "requests") == 1);
  }
  SECTION("a reset before any of the answer only with on_reset") {
    mock_downstream mock({"--delay", "5ms", "--path", "coupon=reset"});
    seed_config cfg{mock.url()};
    cfg.downstream_extra = "    retry: {on_reset: true}\n";
    gateway_process gw(cfg.yaml());
    check_offer(http_get(gw.port(), offer_target("F")), "F", {"coupon"});
    CHECK(coupon_counter(mock, "requests") == 2);
  }
  SECTION("on_status: [500] retries a 500") {
    mock_downstream mock({"--delay", "5ms", "--path", "coupon=fail"});
    seed_config cfg{mock.url()};
    cfg.downstream_extra = "    retry: {on_status: [500], attempts: 3}\n";
    gateway_process gw(cfg.yaml());
    check_offer(http_get(gw.port(), offer_target("D")), "D", {"coupon"});
    CHECK(coupon_counter(mock, "requests") == 3);
  }
}

TEST_CASE("retry: a refused connect is retried, and the budget bounds retries when every call fails",
          "[resilience][retry]") {
  mock_downstream mock({"--delay", "5ms"});
  seed_config cfg{mock.url()};
  cfg.url_override["coupon"] = "http://127.0.0.1:1";  // nothing listens there: refused at once
  cfg.deadline = "500ms";
  SECTION("one request: its call is retried once") {
    gateway_process gw(cfg.yaml());
    check_offer(http_get(gw.port(), offer_target("E")), "E", {"coupon"});
    CHECK(metric(gw, "gateway_downstream_retries_total", {{"downstream", "coupon"}}) == 1);
  }
  SECTION("40 requests at once, 5 attempts each: at most 10% of the calls retry at a time") {
    cfg.downstream_extra =
        "    retry: {attempts: 5, backoff: 100ms, max_backoff: 200ms, budget_percent: 10, budget_min: 1}\n";
    gateway_process gw(cfg.yaml());
    const auto answers =
        sql::get_concurrently(gw.port(), std::vector<std::string>(40, offer_target("S")), 10s);
    for (const auto& a : answers) CHECK(a.response.status == 200);
    const auto retries = metric(gw, "gateway_downstream_retries_total", {{"downstream", "coupon"}});
    // Unbounded, 40 calls would retry 4 times each (160) within the deadline; a few places per I/O thread
    // (10% of its calls in flight, at least 1: with 0, a busy machine that spreads the 40 requests out
    // leaves fewer than 10 in flight per thread, and no place at all), each taken for a backoff of up to
    // 200 ms, allow a few dozen at most.
    CHECK(retries >= 1);
    CHECK(retries <= 40);
  }
}

TEST_CASE("hedge: a slow first attempt is overtaken by its hedge, whose socket wins, the loser's is closed",
          "[resilience][hedge]") {
  // A fifth of coupon's answers take 600 ms; the hedge goes after 50 ms.
  mock_downstream mock({"--delay", "5ms", "--path", "coupon=ok:5ms,p80=600ms"});
  seed_config cfg{mock.url()};
  cfg.downstream_extra = "    hedge: {delay: 50ms, budget_percent: 100}\n";
  gateway_process gw(cfg.yaml());

  int slow = 0;
  for (int i = 0; i < 30; ++i) {
    const auto start = steady::now();
    check_offer(http_get(gw.port(), offer_target("H" + std::to_string(i))), "H" + std::to_string(i));
    if (steady::now() - start > 400ms) ++slow;
  }
  const auto hedges = metric(gw, "gateway_downstream_hedges_total", {{"downstream", "coupon"}});
  CHECK(hedges >= 1);
  CHECK(coupon_counter(mock, "requests") == 30 + static_cast<long long>(hedges));
  CHECK(slow <= 5);  // only when both attempts drew the slow answer
  // Each hedge that won closed its slow first attempt's connection before the answer.
  CHECK(mock.wait_stats([&](const auto& s) { return mock.path_counter(s, "coupon", "cancelled") >= 1; }, 3s)
            .is_object());
  CHECK(coupon_counter(mock, "cancelled") >= 1);
}

TEST_CASE("hedge: the budget caps hedges at its share of the calls", "[resilience][hedge]") {
  mock_downstream mock(
      {"--delay", "5ms", "--path", "coupon=ok:150ms"});  // every answer slower than the delay
  seed_config cfg{mock.url()};
  cfg.downstream_extra = "    hedge: {delay: 20ms, budget_percent: 10}\n";
  gateway_process gw(cfg.yaml());

  const auto answers = sql::get_concurrently(gw.port(), std::vector<std::string>(60, offer_target("Q")), 10s);
  for (const auto& a : answers) CHECK(a.response.status == 200);
  const auto hedges = metric(gw, "gateway_downstream_hedges_total", {{"downstream", "coupon"}});
  CHECK(hedges <= 6);  // 10% of 60
  CHECK(coupon_counter(mock, "requests") <= 66);
  // Every downstream of this config hedges, each within its own budget.
  CHECK(metric(gw, "gateway_downstream_hedges_total", {{"downstream", "inventory"}}) <= 6);
}
