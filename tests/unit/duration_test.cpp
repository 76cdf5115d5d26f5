#include "gateway/runtime/duration.hpp"

#include <catch2/catch.hpp>

using namespace gateway;
using namespace std::chrono_literals;

TEST_CASE("durations parse in every unit") {
  CHECK(parse_duration("150ms") == microseconds(150ms));
  CHECK(parse_duration("2s") == microseconds(2s));
  CHECK(parse_duration("1m") == microseconds(1min));
  CHECK(parse_duration("500us") == microseconds(500));
  CHECK(parse_duration("0ms") == microseconds(0));
}

TEST_CASE("malformed durations are rejected") {
  for (const char* bad :
       {"", "ms", "150", "1.5s", "-5ms", " 5ms", "5 ms", "5msx", "5h", "99999999999999s", "5MS"}) {
    INFO(bad);
    CHECK_FALSE(parse_duration(bad).has_value());
  }
}

TEST_CASE("millis_left is never negative") {
  const auto now = clock::now();
  CHECK(millis_left(now - 5ms, now) == 0);
  CHECK(millis_left(now + 250ms, now) == 250);
}
