// The last-good-answer cache: a copy per key while younger than max_stale, the least recently used
// answers dropped first to stay within its bytes; and how the merge writes a stale answer.

#include "gateway/downstream/answer_cache.hpp"
#include "gateway/aggregate/merge.hpp"
#include "gateway/config/config_loader.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace gateway;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

json_object_text answer(const std::string& sku) {
  return json_object_from(json{{"sku", sku}, {"priceCent", 100}});
}

}  // namespace

TEST_CASE("stale cache: the last good answer per key, while younger than max_stale") {
  answer_cache cache(64 * 1024, 10s);
  const auto t0 = clock::now();
  CHECK_FALSE(cache.get("/c?sku=A", t0));
  cache.put("/c?sku=A", answer("A1"), t0, 0);
  cache.put("/c?sku=A", answer("A2"), t0 + 1s, 0);  // replaces
  cache.put("/c?sku=B", answer("B"), t0 + 1s, 0);
  const auto a = cache.get("/c?sku=A", t0 + 5s);
  REQUIRE(a);
  CHECK(a->text == answer("A2").text);
  CHECK(a->members.size() == 2);
  CHECK(a->key(a->members[0]) == "priceCent");
  CHECK_FALSE(cache.get("/c?sku=A", t0 + 12s));  // too old
  CHECK(cache.entries() == 2);
  CHECK(cache.served() == 1);
}

TEST_CASE("stale cache: within its bytes, the least recently used answers go first") {
  const auto one = answer("X").text.size();
  answer_cache cache(3 * (one + 200), 60s);
  const auto t0 = clock::now();
  cache.put("a", answer("X"), t0, 0);
  cache.put("b", answer("X"), t0, 0);
  cache.put("c", answer("X"), t0, 0);
  CHECK(cache.get("a", t0));  // a is now the most recently used
  cache.put("d", answer("X"), t0, 0);
  CHECK(cache.bytes() <= 3 * (one + 200));
  CHECK(cache.get("a", t0));
  CHECK_FALSE(cache.get("b", t0));  // the least recently used went
  CHECK(cache.get("d", t0));
  // An answer larger than the whole cache is not kept (it would push out everything).
  answer_cache tiny(100, 60s);
  tiny.put("big", answer(std::string(500, 'x')), t0, 0);
  CHECK(tiny.entries() == 0);
}

TEST_CASE("merge: a stale answer is merged like a fresh one, but degraded with reason stale") {
  auto r = load_config_text(R"(
downstreams:
  d: {url: http://127.0.0.1:9}
routes:
  - path: /x
    degraded_reason_field: why
    calls:
      - {name: coupon, downstream: d, path: /c, fallback: {priceCent: -1}}
)",
                            "t.yaml");
  REQUIRE(r.errors.empty());
  call_result stale;
  stale.outcome = call_outcome::stale;
  stale.body = answer("S");
  const auto merged = merge_results(std::get<aggregate_route>(r.config->routes[0].kind), {stale});
  CHECK(json::parse(merged.body)[0] ==
        json{{"source", "coupon"}, {"sku", "S"}, {"priceCent", 100}, {"why", "stale"}, {"degraded", true}});
  CHECK(merged.degraded == "coupon;reason=stale");
}
