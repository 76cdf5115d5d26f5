// The per-thread numbers that decide retries and hedges: the retry budget (a share of the calls in
// flight, or a minimum), the hedge budget over its window, the hedge delay from recent latencies, and the
// backoff's jitter.

#include "gateway/downstream/http_endpoints.hpp"

#include "gateway/downstream/endpoint_breakers.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <map>
#include <vector>

using namespace gateway;
using namespace std::chrono_literals;

namespace {

using tcp = boost::asio::ip::tcp;

tcp::endpoint local(std::uint16_t port) {
  return {boost::asio::ip::make_address("127.0.0.1"), port};
}

std::vector<std::shared_ptr<const resolved_address>> fixed(std::initializer_list<std::uint16_t> ports) {
  std::vector<std::shared_ptr<const resolved_address>> sources;
  for (auto port : ports) sources.push_back(std::make_shared<resolved_address>(local(port)));
  return sources;
}

struct lane_fixture {
  explicit lane_fixture(downstream_settings s,
                        std::vector<std::shared_ptr<const resolved_address>> sources = fixed({9}),
                        bool endpoint_breakers_on = false)
      : settings(std::move(s)),
        breakers("d", settings.breaker),
        lane(ioc.get_executor(), std::move(sources), 4, 4, settings,
             endpoint_breakers_on ? &breakers : nullptr) {}

  boost::asio::io_context ioc;
  downstream_settings settings;
  endpoint_breakers breakers;
  http_endpoints lane;
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

TEST_CASE("http lane: attempts spread over the endpoints by attempts in flight") {
  lane_fixture f(downstream_settings{}, fixed({9001, 9002, 9003}));
  const auto now = clock::now();
  std::map<std::uint16_t, int> picked;
  std::vector<http_endpoints::endpoint*> held;
  for (int i = 0; i < 30; ++i) {
    auto* e = f.lane.pick(now, nullptr).to;
    REQUIRE(e != nullptr);
    ++picked[e->address.port()];
    held.push_back(e);
  }
  // Power of two choices on attempts in flight: with every pick held, they stay within a few of each other.
  REQUIRE(picked.size() == 3);
  for (const auto& [port, n] : picked) CHECK(n >= 7);
  CHECK(f.lane.endpoint_count() == 3);
  // `avoid` is left out while another is there.
  for (int i = 0; i < 20; ++i) CHECK(f.lane.pick(now, held[0]).to != held[0]);
}

TEST_CASE("http lane: an endpoint failing in a row is ejected, for longer each time, and comes back") {
  downstream_settings s;
  s.ejection.consecutive_failures = 3;
  s.ejection.base_time = 1s;
  lane_fixture f(s, fixed({9001, 9002, 9003}));
  const auto now = clock::now();
  auto* bad = f.lane.pick(now, nullptr).to;
  for (int i = 0; i < 3; ++i) {
    ++bad->in_flight;
    f.lane.attempt_ended(*bad, {}, true, false, now);
  }
  f.lane.attempt_ended(*bad, {}, false, true, now);  // the pick's own
  CHECK(f.lane.ejections() == 1);
  for (int i = 0; i < 30; ++i) {
    auto* e = f.lane.pick(now + 500ms, nullptr).to;
    CHECK(e != bad);
    f.lane.attempt_ended(*e, {}, false, true, now);
  }
  bool back = false;
  for (int i = 0; i < 30 && !back; ++i) {
    auto* e = f.lane.pick(now + 1100ms, nullptr).to;
    back = e == bad;
    f.lane.attempt_ended(*e, {}, false, true, now);
  }
  CHECK(back);
  // The second ejection lasts twice as long.
  for (int i = 0; i < 3; ++i) {
    ++bad->in_flight;
    f.lane.attempt_ended(*bad, {}, true, false, now + 2s);
  }
  CHECK(f.lane.ejections() == 2);
  CHECK(bad->ejected_until == now + 2s + 2s);
}

TEST_CASE("http lane: never more than max_percent of the endpoints are ejected, a lone endpoint never is") {
  downstream_settings s;
  s.ejection.consecutive_failures = 1;
  s.ejection.max_percent = 50;
  SECTION("two endpoints: one may go, not both") {
    lane_fixture f(s, fixed({9001, 9002}));
    const auto now = clock::now();
    auto* a = f.lane.pick(now, nullptr).to;
    auto* b = f.lane.pick(now, a).to;
    f.lane.attempt_ended(*a, {}, true, false, now);
    f.lane.attempt_ended(*b, {}, true, false, now);
    CHECK(f.lane.ejections() == 1);
  }
  SECTION("one endpoint") {
    lane_fixture f(s);
    const auto now = clock::now();
    auto* only = f.lane.pick(now, nullptr).to;
    f.lane.attempt_ended(*only, {}, true, false, now);
    CHECK(f.lane.ejections() == 0);
    CHECK(f.lane.pick(now, nullptr).to == only);
  }
}

TEST_CASE("http lane: endpoints follow the addresses, a gone one is retired and freed once unused") {
  auto source = std::make_shared<resolved_address>();
  lane_fixture f(downstream_settings{}, {source});
  const auto now = clock::now();
  CHECK(f.lane.pick(now, nullptr).to == nullptr);  // not resolved yet
  source->set({local(9001), local(9002)});
  auto* first = f.lane.pick(now, nullptr).to;
  REQUIRE(first != nullptr);
  CHECK(f.lane.endpoint_count() == 2);
  const auto kept = static_cast<std::uint16_t>(first->address.port() == 9001 ? 9002 : 9001);
  source->set({local(kept)});
  for (int i = 0; i < 10; ++i) {
    auto* e = f.lane.pick(now, nullptr).to;
    REQUIRE(e != nullptr);
    CHECK(e->address.port() == kept);
    f.lane.attempt_ended(*e, {}, false, true, now);
  }
  CHECK(first->removed);  // still in use by its attempt: retired, not freed
  f.lane.attempt_ended(*first, {}, false, true, now);
  CHECK(f.lane.endpoint_count() == 1);
}

TEST_CASE("http lane: an endpoint whose breaker opened is left out until its probes close it") {
  downstream_settings s;
  s.ejection.consecutive_failures = 0;  // only the breakers act
  s.breaker.min_calls = 4;
  s.breaker.failure_percent = 50;
  s.breaker.cooldown = 1s;
  s.breaker.half_open_calls = 1;
  lane_fixture f(s, fixed({9001, 9002}), true);
  const auto now = clock::now();
  http_endpoints::endpoint* bad = nullptr;
  for (int i = 0; i < 20 && (bad == nullptr || bad->breaker->current() != circuit_breaker::state::open);
       ++i) {
    const auto c = f.lane.pick(now, nullptr);
    REQUIRE(c.to != nullptr);
    REQUIRE(c.ticket.allowed);  // several endpoints: each attempt asks its endpoint's breaker
    const bool fails = c.to->address.port() == 9001;
    if (fails) bad = c.to;
    f.lane.attempt_ended(*c.to, c.ticket, fails, !fails, now);
  }
  REQUIRE(bad != nullptr);
  REQUIRE(bad->breaker->current() == circuit_breaker::state::open);
  CHECK(f.breakers.all().size() == 2);
  for (int i = 0; i < 30; ++i) {
    const auto c = f.lane.pick(now + 500ms, nullptr);
    REQUIRE(c.to != nullptr);
    CHECK(c.to != bad);
    f.lane.attempt_ended(*c.to, c.ticket, false, true, now + 500ms);
  }
  // Even a retry that would rather avoid the good one does not go to the open one.
  auto* good = f.lane.pick(now + 500ms, nullptr).to;
  const auto other = f.lane.pick(now + 500ms, good);
  CHECK(other.to == good);
  f.lane.attempt_ended(*good, {}, false, true, now);
  f.lane.attempt_ended(*other.to, other.ticket, false, true, now);

  // After the cooldown one probe goes to it; its success closes the breaker.
  bool probed = false;
  for (int i = 0; i < 30 && !probed; ++i) {
    const auto c = f.lane.pick(now + 1100ms, nullptr);
    REQUIRE(c.to != nullptr);
    probed = c.to == bad;
    if (probed) CHECK(c.ticket.probe);
    f.lane.attempt_ended(*c.to, c.ticket, false, true, now + 1100ms);
  }
  CHECK(probed);
  CHECK(bad->breaker->current() == circuit_breaker::state::closed);
}

TEST_CASE("http lane: when every endpoint's breaker is open, nothing is picked and the pick says why") {
  downstream_settings s;
  s.ejection.consecutive_failures = 0;
  s.breaker.consecutive_failures = 1;
  lane_fixture f(s, fixed({9001, 9002}), true);
  const auto now = clock::now();
  for (int i = 0; i < 10; ++i) {
    const auto c = f.lane.pick(now, nullptr);
    if (c.to == nullptr) break;
    f.lane.attempt_ended(*c.to, c.ticket, true, false, now);
  }
  const auto c = f.lane.pick(now, nullptr);
  CHECK(c.to == nullptr);
  CHECK(c.refused);
}

TEST_CASE("http lane: a lone endpoint's breaker is never asked (the downstream's judges its calls)") {
  downstream_settings s;
  s.breaker.consecutive_failures = 1;
  lane_fixture f(s, fixed({9001}), true);
  const auto now = clock::now();
  for (int i = 0; i < 5; ++i) {
    const auto c = f.lane.pick(now, nullptr);
    REQUIRE(c.to != nullptr);
    CHECK_FALSE(c.ticket.allowed);
    f.lane.attempt_ended(*c.to, c.ticket, true, false, now);
  }
  CHECK(f.lane.pick(now, nullptr).to != nullptr);
}
