// The mock's latency distributions ("150ms,p98=700ms") and the seeded draws that pick the tail.

#include "loadtest/mock/latency.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace mock;
using namespace std::chrono_literals;

namespace {

latency parsed(std::string_view text) {
  std::string error;
  auto result = parse_latency(text, error);
  INFO(text << ": " << error);
  REQUIRE(result.has_value());
  return *result;
}

}  // namespace

TEST_CASE("mock latency: a plain duration has no tail", "[mock]") {
  const auto l = parsed("150ms");
  CHECK(l.base == microseconds(150ms));
  CHECK_FALSE(l.has_tail());
  CHECK(l.pick(0) == microseconds(150ms));
  CHECK(l.pick(latency::draws - 1) == microseconds(150ms));
}

TEST_CASE("mock latency: one tail term takes the slowest share of the draws", "[mock]") {
  const auto l = parsed("150ms,p98=700ms");
  CHECK(l.base == microseconds(150ms));
  REQUIRE(l.tail_size == 1);
  CHECK(l.tail[0].from == 980'000);
  CHECK(l.pick(0) == microseconds(150ms));
  CHECK(l.pick(979'999) == microseconds(150ms));
  CHECK(l.pick(980'000) == microseconds(700ms));
  CHECK(l.pick(latency::draws - 1) == microseconds(700ms));
}

TEST_CASE("mock latency: several tail terms, decimals in percentiles", "[mock]") {
  const auto l = parsed("100ms,p90=300ms,p99=900ms,p99.95=2s");
  REQUIRE(l.tail_size == 3);
  CHECK(l.pick(899'999) == microseconds(100ms));
  CHECK(l.pick(900'000) == microseconds(300ms));
  CHECK(l.pick(989'999) == microseconds(300ms));
  CHECK(l.pick(990'000) == microseconds(900ms));
  CHECK(l.pick(999'499) == microseconds(900ms));
  CHECK(l.pick(999'500) == microseconds(2s));
  CHECK(parsed("1ms,p0.0001=2ms").tail[0].from == 1);
  CHECK(parsed("1ms,p50=1ms").tail[0].from == 500'000);  // an equal delay is allowed
}

TEST_CASE("mock latency: bad text is rejected with a reason", "[mock]") {
  for (const char* bad : {"",
                          "150",
                          " 150ms",
                          "150ms,",
                          "150ms,,p98=1s",
                          "150ms,p98",
                          "150ms,98=1s",
                          "150ms,p0=1s",
                          "150ms,p100=1s",
                          "150ms,p-5=1s",
                          "150ms,p98=",
                          "150ms,p98=1x",
                          "150ms,p98=1s,",
                          "150ms,p.5=1s",
                          "150ms,p5.=1s",
                          "150ms,p99.12345=1s",
                          "150ms,p90=1s,p80=2s",
                          "150ms,p90=1s,p90=2s",
                          "150ms,p98=100ms",
                          "150ms,p90=2s,p95=1s",
                          "1ms,p10=2ms,p20=3ms,p30=4ms,p40=5ms,p50=6ms"}) {
    std::string error;
    INFO(bad);
    CHECK_FALSE(parse_latency(bad, error).has_value());
    CHECK_FALSE(error.empty());
  }
  std::string error;
  parse_latency("150ms,p200=1s", error);
  CHECK(error.find("p200") != std::string::npos);
  parse_latency("150ms,p90=1s,p80=2s", error);
  CHECK(error.find("increase") != std::string::npos);
  parse_latency("150ms,p98=100ms", error);
  CHECK(error.find("shorter") != std::string::npos);
}

TEST_CASE("mock latency: draws repeat with the seed and spread evenly", "[mock]") {
  const auto sequence = [](std::uint64_t seed) {
    draw_generator g(seed);
    std::vector<std::uint32_t> out;
    for (int i = 0; i < 8; ++i) out.push_back(g.next_draw());
    return out;
  };
  CHECK(sequence(1) == sequence(1));
  CHECK(sequence(1) != sequence(2));

  draw_generator g(path_seed(1, "coupon"));
  const auto l = parsed("1ms,p98=2ms");
  int slow = 0;
  bool in_range = true;
  for (int i = 0; i < 100'000; ++i) {
    const auto draw = g.next_draw();
    in_range = in_range && draw < latency::draws;
    slow += l.pick(draw) == microseconds(2ms);
  }
  CHECK(in_range);
  CHECK(slow > 1'700);
  CHECK(slow < 2'300);
}

TEST_CASE("mock latency: each path has its own seed", "[mock]") {
  CHECK(path_seed(1, "coupon") == path_seed(1, "coupon"));
  CHECK(path_seed(1, "coupon") != path_seed(1, "inventory"));
  CHECK(path_seed(1, "coupon") != path_seed(2, "coupon"));
}
