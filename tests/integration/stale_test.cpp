// Stale-if-error: a downstream's last good answer for the same target is served instead of the static
// fallback when a call fails, marked degraded with reason stale, while it is younger than max_stale and
// within the byte bound.

#include "tests/integration/metric_scrape.hpp"
#include "tests/support/offer_checks.hpp"

#include <chrono>
#include <string>
#include <thread>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

nlohmann::json coupon_entry(const http_response& res) {
  const auto body = res.json();
  for (const auto& entry : body) {
    if (entry.value("source", "") == "coupon") return entry;
  }
  return {};
}

}  // namespace

TEST_CASE("stale: a failing call serves its last good answer for that target, marked stale",
          "[resilience][stale]") {
  mock_downstream mock({"--delay", "5ms"});
  seed_config cfg{mock.url()};
  cfg.deadline = "300ms";
  cfg.downstream_extra =
      "    stale_if_error: {max_stale: 2s, max_bytes: 64KiB}\n"
      "    circuit_breaker: {enabled: false}\n";
  gateway_process gw(cfg.yaml());

  const auto good = http_get(gw.port(), offer_target("S1"));
  check_offer(good, "S1");
  const auto fresh = coupon_entry(good);
  REQUIRE(fresh.value("sku", "") == "S1");

  mock.set_mode("coupon", "fail");
  const auto stale = http_get(gw.port(), offer_target("S1"));
  REQUIRE(stale.status == 200);
  CHECK(stale.degraded_reason("coupon") == "stale");
  auto served = coupon_entry(stale);
  CHECK(served["degraded"] == true);
  served["degraded"] = false;
  CHECK(served == fresh);  // the last good answer as it was

  // Another target has no last good answer: the static fallback.
  const auto other = http_get(gw.port(), offer_target("S2"));
  CHECK(other.degraded_reason("coupon") == "error");
  CHECK(coupon_entry(other).value("priceCent", 0) == fallback_price);

  // Older than max_stale: the static fallback again.
  std::this_thread::sleep_for(2100ms);
  CHECK(http_get(gw.port(), offer_target("S1")).degraded_reason("coupon") == "error");
  CHECK(metric(gw, "gateway_stale_answers_served_total", {{"downstream", "coupon"}}) == 1);
}

TEST_CASE("stale: a hung call at the deadline serves it too, without stale_if_error nothing is kept",
          "[resilience][stale]") {
  mock_downstream mock({"--delay", "5ms"});
  seed_config cfg{mock.url()};
  cfg.deadline = "200ms";
  cfg.downstream_extra = "    stale_if_error: {}\n    circuit_breaker: {enabled: false}\n";
  gateway_process gw(cfg.yaml());
  check_offer(http_get(gw.port(), offer_target("H1")), "H1");
  mock.set_mode("coupon", "hang");
  const auto res = http_get(gw.port(), offer_target("H1"));
  CHECK(res.degraded_reason("coupon") == "stale");
  CHECK(coupon_entry(res).value("sku", "") == "H1");
}

TEST_CASE("stale: the byte bound keeps only the most recently used answers", "[resilience][stale]") {
  mock_downstream mock({"--delay", "2ms"});
  seed_config cfg{mock.url()};
  // About four answers fit (each ~300 bytes with its key and bookkeeping).
  cfg.downstream_extra = "    stale_if_error: {max_bytes: 1300}\n    circuit_breaker: {enabled: false}\n";
  gateway_process gw(cfg.yaml());
  for (int i = 0; i < 10; ++i)
    check_offer(http_get(gw.port(), offer_target("K" + std::to_string(i))), "K" + std::to_string(i));
  const auto kept = metric(gw, "gateway_stale_cache_bytes", {{"downstream", "coupon"}});
  CHECK(kept > 0);
  CHECK(kept <= 1300);
  mock.set_mode("coupon", "fail");
  CHECK(http_get(gw.port(), offer_target("K9")).degraded_reason("coupon") == "stale");  // recent: kept
  CHECK(http_get(gw.port(), offer_target("K0")).degraded_reason("coupon") == "error");  // oldest: gone
}
