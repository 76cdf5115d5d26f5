// Coalescing: identical calls in flight on an I/O thread share one downstream request; a follower whose
// leader's client leaves gets a call of its own.

#include "tests/integration/metric_scrape.hpp"
#include "tests/integration/sql_support.hpp"
#include "tests/support/offer_checks.hpp"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

std::string coalescing_config(const mock_downstream& mock) {
  seed_config cfg{mock.url()};
  cfg.threads = 1;  // one lane: every identical call meets the others
  cfg.downstream_extra = "    coalesce: true\n";
  return cfg.yaml();
}

}  // namespace

TEST_CASE("coalesce: identical calls in flight share one downstream request, different ones do not",
          "[resilience][coalesce]") {
  mock_downstream mock({"--delay", "300ms"});
  gateway_process gw(coalescing_config(mock));

  const auto same = sql::get_concurrently(gw.port(), std::vector<std::string>(10, offer_target("SAME")), 10s);
  for (const auto& a : same) check_offer(a.response, "SAME");
  CHECK(mock.path_counter(mock.stats(), "coupon", "requests") <= 2);
  CHECK(metric(gw, "gateway_downstream_coalesced_total", {{"downstream", "coupon"}}) >= 8);

  std::vector<std::string> targets;
  for (int i = 0; i < 5; ++i) targets.push_back(offer_target("D" + std::to_string(i)));
  const auto before = mock.path_counter(mock.stats(), "coupon", "requests");
  const auto different = sql::get_concurrently(gw.port(), targets, 10s);
  for (int i = 0; i < 5; ++i)
    check_offer(different[static_cast<std::size_t>(i)].response, "D" + std::to_string(i));
  CHECK(mock.path_counter(mock.stats(), "coupon", "requests") == before + 5);
}

TEST_CASE("coalesce: when the leader's client leaves, its follower gets a call of its own",
          "[resilience][coalesce]") {
  mock_downstream mock({"--delay", "400ms"});
  gateway_process gw(coalescing_config(mock));

  http_connection leader(gw.port());
  leader.send_request("GET", offer_target("L1"));
  mock.wait_stats([&](const auto& s) { return mock.path_counter(s, "coupon", "requests") == 1; });
  http_connection follower(gw.port());
  follower.send_request("GET", offer_target("L1"));
  std::this_thread::sleep_for(50ms);              // the follower has joined
  leader.close();                                 // the leader's request is cancelled: its calls end
  check_offer(follower.read_response(5s), "L1");  // whole, from a call of its own
  CHECK(mock.path_counter(mock.stats(), "coupon", "requests") == 2);
}
