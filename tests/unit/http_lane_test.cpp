// The per-thread numbers that decide retries and hedges: the retry budget (a share of the calls in
// flight, or a minimum), the hedge budget over its window, the hedge delay from recent latencies, and the
// backoff's jitter.

#include "gateway/downstream/http_lane.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

using namespace gateway;
using namespace std::chrono_literals;

namespace {

struct lane_fixture {
  explicit lane_fixture(downstream_settings s)
      : settings(std::move(s)),
        lane(ioc.get_executor(),
             std::make_shared<resolved_address>(
                 boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 9)),
             4, settings) {}

  boost::asio::io_context ioc;
  downstream_settings settings;
  http_lane lane;
};

}  // namespace

TEST_CASE("http lane: retries in flight are held to the budget's share of calls, or its minimum") {
  downstream_settings s;
  s.retry.budget_percent = 20;
  s.retry.budget_min = 2;
  lane_fixture f(s);
  const auto now = clock::now();
  for (int i = 0; i < 20; ++i) f.lane.call_started(now);
  // 20% of 20 calls: 4 places.
  for (int i = 0; i < 4; ++i) CHECK(f.lane.try_retry());
  CHECK_FALSE(f.lane.try_retry());
  f.lane.retry_ended();
  CHECK(f.lane.try_retry());
  CHECK(f.lane.retries() == 5);
  for (int i = 0; i < 19; ++i) f.lane.call_ended();
  for (int i = 0; i < 4; ++i) f.lane.retry_ended();
  // One call in flight: the minimum of 2 places still holds.
  CHECK(f.lane.try_retry());
  CHECK(f.lane.try_retry());
  CHECK_FALSE(f.lane.try_retry());
}

TEST_CASE("http lane: hedges stay within their share of the calls over the window") {
  downstream_settings s;
  s.hedge.enabled = true;
  s.hedge.budget_percent = 10;
  lane_fixture f(s);
  const auto now = clock::now();
  for (int i = 0; i < 9; ++i) f.lane.call_started(now);
  CHECK_FALSE(f.lane.try_hedge(now));  // one hedge would be 11% of 9 calls
  f.lane.call_started(now);
  CHECK(f.lane.try_hedge(now));
  CHECK_FALSE(f.lane.try_hedge(now));
  // Ten seconds on, the window has forgotten those calls and that hedge.
  const auto later = now + 11s;
  for (int i = 0; i < 10; ++i) f.lane.call_started(later);
  CHECK(f.lane.try_hedge(later));
  CHECK(f.lane.hedges() == 2);
}

TEST_CASE("http lane: the hedge delay is fixed, or the percentile of recent good latencies within bounds") {
  downstream_settings s;
  s.hedge.enabled = true;
  s.hedge.min_delay = 5ms;
  s.hedge.max_delay = 500ms;
  SECTION("fixed") {
    s.hedge.delay = 40ms;
    lane_fixture f(s);
    CHECK(f.lane.hedge_delay() == 40ms);
  }
  SECTION("p90 of recent latencies, max_delay until there are enough") {
    s.hedge.percentile = 90;
    lane_fixture f(s);
    CHECK(f.lane.hedge_delay() == 500ms);
    for (int i = 1; i <= 100; ++i) f.lane.record_latency(std::chrono::milliseconds(i));
    const auto delay = f.lane.hedge_delay();
    CHECK(delay >= 85ms);
    CHECK(delay <= 95ms);
    for (int i = 0; i < 128; ++i) f.lane.record_latency(1ms);  // fast now: held up by min_delay
    CHECK(f.lane.hedge_delay() == 5ms);
  }
}

TEST_CASE("http lane: the backoff's jitter stays within its limit") {
  lane_fixture f(downstream_settings{});
  for (int i = 0; i < 1000; ++i) {
    const auto j = f.lane.jitter(10ms);
    CHECK(j >= 0ms);
    CHECK(j <= 10ms);
  }
  CHECK(f.lane.jitter(clock::duration(0)) == clock::duration(0));
}
