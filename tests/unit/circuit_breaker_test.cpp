// The circuit breaker's state machine, driven with explicit times: when it opens (ratio over the window,
// failures in a row), what it lets through while open and half-open, and which outcomes count.

#include "gateway/downstream/circuit_breaker.hpp"

#include <catch2/catch.hpp>

using namespace gateway;
using namespace std::chrono_literals;
using state = circuit_breaker::state;

namespace {

breaker_settings settings() {
  breaker_settings s;
  s.window = 10s;
  s.min_calls = 10;
  s.failure_percent = 50;
  s.consecutive_failures = 0;
  s.cooldown = 2s;
  s.half_open_calls = 2;
  return s;
}

// One call at `at`: allowed or not, and recorded with `outcome` when allowed.
bool call(circuit_breaker& b, clock::time_point at, call_outcome outcome) {
  const auto t = b.allow(at);
  b.record(t, outcome, at);
  return t.allowed;
}

}  // namespace

TEST_CASE("circuit breaker: opens at the failure ratio once the window holds min_calls") {
  circuit_breaker b("coupon", settings());
  const auto t0 = clock::now();
  for (int i = 0; i < 5; ++i) CHECK(call(b, t0, call_outcome::ok));
  for (int i = 0; i < 4; ++i) CHECK(call(b, t0, call_outcome::timeout));
  CHECK(b.current() == state::closed);  // 4 of 9: below min_calls
  CHECK(call(b, t0, call_outcome::error));
  CHECK(b.current() == state::open);  // 5 of 10 failed
  CHECK(b.transitions_to(state::open) == 1);
  CHECK_FALSE(b.allow(t0 + 1s).allowed);
}

TEST_CASE("circuit breaker: failures older than the window no longer count") {
  circuit_breaker b("coupon", settings());
  const auto t0 = clock::now();
  for (int i = 0; i < 9; ++i) call(b, t0, call_outcome::error);
  CHECK(b.current() == state::closed);
  for (int i = 0; i < 9; ++i) call(b, t0 + 11s, call_outcome::ok);  // the first 9 have left the window
  CHECK(call(b, t0 + 11s, call_outcome::error));
  CHECK(b.current() == state::closed);  // 1 of 10
}

TEST_CASE("circuit breaker: opens on consecutive failures, a success resets the run") {
  auto s = settings();
  s.consecutive_failures = 3;
  s.min_calls = 1000;
  circuit_breaker b("coupon", s);
  const auto t0 = clock::now();
  call(b, t0, call_outcome::error);
  call(b, t0, call_outcome::error);
  call(b, t0, call_outcome::ok);
  call(b, t0, call_outcome::error);
  call(b, t0, call_outcome::timeout);
  CHECK(b.current() == state::closed);
  call(b, t0, call_outcome::error);
  CHECK(b.current() == state::open);
}

TEST_CASE("circuit breaker: cancelled, rejected and circuit_open outcomes count neither way") {
  auto s = settings();
  s.consecutive_failures = 2;
  circuit_breaker b("coupon", s);
  const auto t0 = clock::now();
  call(b, t0, call_outcome::error);
  for (int i = 0; i < 20; ++i) call(b, t0, call_outcome::cancelled);
  call(b, t0, call_outcome::rejected);
  CHECK(b.current() == state::closed);
  call(b, t0, call_outcome::timeout);
  CHECK(b.current() == state::open);  // the run of failures was not broken
}

TEST_CASE("circuit breaker: after the cooldown, half-open lets half_open_calls probes through") {
  auto s = settings();
  s.consecutive_failures = 1;
  circuit_breaker b("coupon", s);
  const auto t0 = clock::now();
  call(b, t0, call_outcome::error);
  REQUIRE(b.current() == state::open);
  CHECK_FALSE(b.allow(t0 + 1999ms).allowed);

  const auto p1 = b.allow(t0 + 2s);
  const auto p2 = b.allow(t0 + 2s);
  CHECK(b.current() == state::half_open);
  REQUIRE(p1.allowed);
  REQUIRE(p2.allowed);
  CHECK(p1.probe);
  CHECK_FALSE(b.allow(t0 + 2s).allowed);  // both probes are out

  SECTION("every probe succeeding closes it") {
    b.record(p1, call_outcome::ok, t0 + 2s);
    CHECK(b.current() == state::half_open);
    b.record(p2, call_outcome::ok, t0 + 2s);
    CHECK(b.current() == state::closed);
    CHECK(b.transitions_to(state::closed) == 1);
    CHECK(call(b, t0 + 2s, call_outcome::ok));
  }
  SECTION("a probe failing opens it again for another cooldown") {
    b.record(p1, call_outcome::ok, t0 + 2s);
    b.record(p2, call_outcome::timeout, t0 + 3s);
    CHECK(b.current() == state::open);
    CHECK(b.transitions_to(state::open) == 2);
    CHECK_FALSE(b.allow(t0 + 4s).allowed);
    CHECK(b.allow(t0 + 5s).allowed);
  }
  SECTION("a cancelled probe gives its place to another") {
    b.record(p1, call_outcome::cancelled, t0 + 2s);
    const auto p3 = b.allow(t0 + 2s);
    CHECK(p3.allowed);
    b.record(p2, call_outcome::ok, t0 + 2s);
    b.record(p3, call_outcome::ok, t0 + 2s);
    CHECK(b.current() == state::closed);
  }
}

TEST_CASE("circuit breaker: an outcome of a call started before a transition counts for nothing") {
  auto s = settings();
  s.consecutive_failures = 2;
  circuit_breaker b("coupon", s);
  const auto t0 = clock::now();
  const auto slow = b.allow(t0);  // started while closed, finishes after the breaker has opened
  call(b, t0, call_outcome::error);
  call(b, t0, call_outcome::error);
  REQUIRE(b.current() == state::open);
  const auto p1 = b.allow(t0 + 2s);
  const auto p2 = b.allow(t0 + 2s);
  b.record(slow, call_outcome::timeout, t0 + 2s);  // must not reopen the half-open breaker
  CHECK(b.current() == state::half_open);
  b.record(p1, call_outcome::ok, t0 + 2s);
  b.record(p2, call_outcome::ok, t0 + 2s);
  CHECK(b.current() == state::closed);
}

TEST_CASE("circuit breaker: state names for metrics and logs") {
  CHECK(to_string(state::closed) == "closed");
  CHECK(to_string(state::half_open) == "half_open");
  CHECK(to_string(state::open) == "open");
  CHECK(static_cast<int>(state::open) == 2);
}
