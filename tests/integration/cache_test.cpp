// Caching of good answers as the downstream's Cache-Control allows (`cache: true`): a fresh answer is
// served without a call, no-store is never kept, and the max-age runs out.

#include "tests/integration/metric_scrape.hpp"
#include "tests/support/offer_checks.hpp"

#include <chrono>
#include <string>
#include <thread>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

std::string caching_config(const mock_downstream& mock) {
  seed_config cfg{mock.url()};
  cfg.downstream_extra = "    cache: true\n";
  return cfg.yaml();
}

}  // namespace

TEST_CASE("cache: an answer is served without a call while its max-age lasts", "[resilience][cache]") {
  mock_downstream mock({"--delay", "2ms", "--cache-control", "public, max-age=2"});
  gateway_process gw(caching_config(mock));

  for (int i = 0; i < 5; ++i) check_offer(http_get(gw.port(), offer_target("C1")), "C1");
  CHECK(mock.path_counter(mock.stats(), "coupon", "requests") == 1);
  check_offer(http_get(gw.port(), offer_target("C2")), "C2");  // another target: its own call
  CHECK(mock.path_counter(mock.stats(), "coupon", "requests") == 2);
  CHECK(metric(gw, "gateway_cache_hits_total", {{"downstream", "coupon"}}) == 4);

  std::this_thread::sleep_for(2100ms);  // expired: asked again
  check_offer(http_get(gw.port(), offer_target("C1")), "C1");
  CHECK(mock.path_counter(mock.stats(), "coupon", "requests") == 3);
}

TEST_CASE("cache: no-store and answers without a max-age are not kept", "[resilience][cache]") {
  SECTION("no-store") {
    mock_downstream mock({"--delay", "2ms", "--cache-control", "no-store, max-age=60"});
    gateway_process gw(caching_config(mock));
    for (int i = 0; i < 3; ++i) check_offer(http_get(gw.port(), offer_target("N")), "N");
    CHECK(mock.path_counter(mock.stats(), "coupon", "requests") == 3);
  }
  SECTION("no Cache-Control") {
    mock_downstream mock({"--delay", "2ms"});
    gateway_process gw(caching_config(mock));
    for (int i = 0; i < 3; ++i) check_offer(http_get(gw.port(), offer_target("M")), "M");
    CHECK(mock.path_counter(mock.stats(), "coupon", "requests") == 3);
  }
  SECTION("cache off (the default) ignores max-age") {
    mock_downstream mock({"--delay", "2ms", "--cache-control", "max-age=60"});
    gateway_process gw(seed_config{mock.url()}.yaml());
    for (int i = 0; i < 3; ++i) check_offer(http_get(gw.port(), offer_target("O")), "O");
    CHECK(mock.path_counter(mock.stats(), "coupon", "requests") == 3);
  }
}
