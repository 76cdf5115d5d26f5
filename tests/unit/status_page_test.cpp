// The status page's pure parts: quantiles estimated from histogram buckets, the difference of two
// snapshots, the window's choice of baseline, and the bounded ring of degraded requests.

#include "gateway/server/status_page.hpp"
#include "gateway/observe/recent_degraded.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

using namespace gateway;
using namespace std::chrono_literals;

namespace {

histogram::snapshot observed(std::initializer_list<std::chrono::nanoseconds> values,
                             const histogram_bounds& bounds = histogram_bounds::latency()) {
  histogram h(bounds);
  for (auto v : values) h.observe(v);
  return h.read();
}

status_sample at(clock::time_point t, std::uint64_t degraded) {
  status_sample s{.at = t, .metrics = {}, .db_waits = {}};
  s.metrics.routes.push_back({.path = "/r", .duration = {}, .server_errors = 0, .degraded = degraded});
  return s;
}

}  // namespace

TEST_CASE("status page: histogram_quantile interpolates within the bucket, as histogram_quantile does",
          "[status]") {
  CHECK_FALSE(histogram_quantile({}, 0.5).has_value());
  // Ten observations in (0.25 s, 0.5 s]: the median is half-way through that bucket.
  histogram::snapshot h;
  h.counts[9] = 10;
  CHECK(*histogram_quantile(h, 0.5) == Approx(0.375));
  CHECK(*histogram_quantile(h, 1.0) == Approx(0.5));
  // 90 fast (<= 0.5 ms), 10 slow (<= 1 s): P50 is fast, P99 in the slow bucket.
  const auto mixed = [] {
    histogram::snapshot m;
    m.counts[0] = 90;
    m.counts[11] = 10;
    return m;
  }();
  CHECK(*histogram_quantile(mixed, 0.5) <= 0.0005);
  CHECK(*histogram_quantile(mixed, 0.99) > 0.75);
  CHECK(*histogram_quantile(mixed, 0.99) <= 1.0);
  // Beyond the last bound: the last bound.
  CHECK(*histogram_quantile(observed({20s}), 0.5) == histogram_bounds::latency().back());
}

TEST_CASE("histogram bounds: each deadline adds bounds at d, 1.02 d, 1.05 d and 1.1 d to the latency grid",
          "[status][metrics]") {
  const auto& grid = histogram_bounds::latency();
  CHECK(grid.size() == 16);
  CHECK(grid[0] == 0.0005);
  CHECK(grid.back() == 10.0);
  const auto b = histogram_bounds::with_deadlines({500ms, 800ms});
  // 0.5 is in the grid already: 3 + 4 new bounds.
  CHECK(b.size() == 23);
  for (double v : {0.0005, 0.25, 0.5, 0.51, 0.525, 0.55, 0.75, 0.8, 0.816, 0.84, 0.88, 1.0, 10.0}) {
    INFO(v);
    CHECK(std::binary_search(b.begin(), b.end(), v));
  }
  CHECK(std::is_sorted(b.begin(), b.end()));
  CHECK(std::adjacent_find(b.begin(), b.end()) == b.end());
  CHECK(b.covers(500ms));
  CHECK(b.covers(800ms));
  CHECK_FALSE(b.covers(300ms));
  CHECK(b == histogram_bounds::with_deadlines({500ms, 800ms}));
  CHECK_FALSE(b == grid);
  // A bound is inclusive (Prometheus' `le`): 0.51 s exactly is in the bucket of 0.51.
  CHECK(b.bucket(0.51) == b.bucket(0.505));
  CHECK(b.bucket(0.5100001) == b.bucket(0.51) + 1);
  CHECK(b.bucket(11.0) == b.size());
}

TEST_CASE("histogram bounds: deadlines are taken in order while all four of their bounds fit",
          "[status][metrics]") {
  std::vector<std::chrono::microseconds> many;
  for (int ms = 110; ms <= 190; ms += 10) many.push_back(std::chrono::milliseconds(ms));
  const auto b = histogram_bounds::with_deadlines(many);
  CHECK(b.size() <= histogram_bounds::capacity);
  CHECK(b.covers(110ms));
  CHECK(b.covers(140ms));  // 16 + 4 * 4 = 32
  CHECK_FALSE(b.covers(150ms));
  CHECK_FALSE(b.covers(190ms));
  // Below a millisecond a deadline adds nothing.
  CHECK(histogram_bounds::with_deadlines({std::chrono::microseconds(500)}) == histogram_bounds::latency());
}

TEST_CASE("status page: answers that waited for the deadline give percentiles within 2% with its buckets",
          "[status][metrics]") {
  const auto bounds = histogram_bounds::with_deadlines({500ms});
  const auto at_deadline = observed({501ms, 502ms, 502ms, 503ms, 504ms, 505ms, 506ms, 508ms}, bounds);
  CHECK(*histogram_quantile(at_deadline, 0.5) == Approx(0.5035).epsilon(0.02));
  CHECK(*histogram_quantile(at_deadline, 0.99) == Approx(0.508).epsilon(0.02));
  // With the latency grid alone they sit in (0.5 s, 0.75 s]: the median reads 625 ms.
  const auto coarse = observed({501ms, 502ms, 502ms, 503ms, 504ms, 505ms, 506ms, 508ms});
  CHECK(*histogram_quantile(coarse, 0.5) == Approx(0.625));
  // A difference keeps the bounds of the snapshots.
  CHECK(histogram_difference(at_deadline, {}).bounds == &bounds);
}

TEST_CASE("status page: histogram_difference subtracts per bucket and never goes below zero", "[status]") {
  const auto then = observed({1ms, 300ms});
  const auto now = observed({1ms, 300ms, 2ms, 2ms, 300ms});
  const auto d = histogram_difference(now, then);
  CHECK(d.count() == 3);
  CHECK(d.sum_seconds == Approx(0.304));
  CHECK(histogram_difference(then, now).count() == 0);
}

TEST_CASE("status page: the window compares with the newest sample at least a span old, and keeps few",
          "[status]") {
  const auto t0 = clock::time_point{} + 1000s;
  status_window w(t0, 30s);
  CHECK(w.baseline(t0 + 10s).at == t0);  // younger than the span: the oldest (the start, at zero)
  CHECK(w.baseline(t0 + 10s).metrics.routes.empty());
  for (int i = 1; i <= 20; ++i) w.keep(at(t0 + i * 5s, static_cast<std::uint64_t>(i)));
  // now = t0 + 100 s: the newest at or before t0 + 70 s.
  CHECK(w.baseline(t0 + 100s).at == t0 + 70s);
  CHECK(w.baseline(t0 + 100s).metrics.routes[0].degraded == 14);
  CHECK(w.size() <= 8);
  // At most one sample per span / 6: one a second later is not kept.
  const auto before = w.size();
  w.keep(at(t0 + 101s, 99));
  CHECK(w.size() == before);
}

TEST_CASE("status page: recent_degraded keeps the newest entries, the failed calls only", "[status]") {
  aggregate_route route;
  route.calls.resize(2);
  route.calls[0].name = "inventory";
  route.calls[0].downstream = "inv";
  route.calls[1].name = "coupon";
  route.calls[1].downstream = "coupons";
  std::vector<call_result> results(2);
  results[0].outcome = call_outcome::ok;
  results[1].outcome = call_outcome::timeout;
  results[1].detail = "deadline";
  results[1].latency = 300ms;

  recent_degraded ring(3);
  CHECK(ring.newest_first().empty());
  for (int i = 0; i < 5; ++i) ring.record("id-" + std::to_string(i), "/api/offer", route, results);
  CHECK(ring.recorded() == 5);
  const auto kept = ring.newest_first();
  REQUIRE(kept.size() == 3);
  CHECK(kept[0].request_id == "id-4");
  CHECK(kept[2].request_id == "id-2");
  CHECK(kept[0].route == "/api/offer");
  CHECK(kept[0].time > 1.6e9);
  REQUIRE(kept[0].calls.size() == 1);
  CHECK(kept[0].calls[0].name == "coupon");
  CHECK(kept[0].calls[0].downstream == "coupons");
  CHECK(kept[0].calls[0].outcome == "timeout");
  CHECK(kept[0].calls[0].detail == "deadline");
  CHECK(kept[0].calls[0].latency_ms == Approx(300));
}
