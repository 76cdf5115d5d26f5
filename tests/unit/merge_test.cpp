#include "gateway/aggregate/merge.hpp"
#include "gateway/config/config_loader.hpp"
#include "gateway/observe/degraded_list.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace gateway;
using nlohmann::json;

namespace {

aggregate_route route_with(const std::string& shape) {
  auto r = load_config_text(R"(
downstreams:
  d: {url: http://127.0.0.1:9}
routes:
  - path: /x
    response: )" + shape + R"(
    calls:
      - {name: inventory, downstream: d, path: /i, fields: [priceCent, stock], fallback: {priceCent: -1, stock: 0}}
      - {name: coupon, downstream: d, path: /c, fallback: {priceCent: -1, stock: 0, note: "n/a"}}
      - {name: bare, downstream: d, path: /b}
)",
                            "test.yaml");
  REQUIRE(r.errors.empty());
  return std::get<aggregate_route>(r.config->routes[0].kind);
}

call_result ok(json body) {
  call_result r;
  r.outcome = call_outcome::ok;
  r.body = json_object_from(body);
  return r;
}

call_result failed(call_outcome why) {
  call_result r;
  r.outcome = why;
  return r;
}

}  // namespace

TEST_CASE("array merge keeps call order, filters fields and marks degraded entries") {
  const auto route = route_with("array");
  const auto merged =
      merge_results(route, {ok({{"source", "spoofed"}, {"sku", "A1"}, {"priceCent", 120}, {"stock", 7}}),
                            failed(call_outcome::timeout), ok({{"degraded", true}, {"nested", {{"a", 1}}}})});
  const auto body = json::parse(merged.body);
  REQUIRE(body.is_array());
  REQUIRE(body.size() == 3);
  CHECK(body[0] == json{{"source", "inventory"}, {"priceCent", 120}, {"stock", 7}, {"degraded", false}});
  CHECK(body[1] ==
        json{{"source", "coupon"}, {"priceCent", -1}, {"stock", 0}, {"note", "n/a"}, {"degraded", true}});
  CHECK(body[2] == json{{"source", "bare"}, {"nested", {{"a", 1}}}, {"degraded", false}});
  CHECK(merged.degraded == "coupon;reason=timeout");
}

TEST_CASE("object merge is keyed by call name") {
  const auto route = route_with("object");
  const auto merged =
      merge_results(route, {failed(call_outcome::error), ok({{"v", "x"}}), failed(call_outcome::cancelled)});
  const auto body = json::parse(merged.body);
  REQUIRE(body.is_object());
  CHECK(body["inventory"] ==
        json{{"source", "inventory"}, {"priceCent", -1}, {"stock", 0}, {"degraded", true}});
  CHECK(body["coupon"] == json{{"source", "coupon"}, {"v", "x"}, {"degraded", false}});
  CHECK(body["bare"] == json{{"source", "bare"}, {"degraded", true}});
  CHECK(merged.degraded == "inventory;reason=error, bare;reason=cancelled");
}

TEST_CASE("a route's degraded_reason_field names why each degraded entry fell back") {
  auto route = route_with("array");
  route.degraded_reason_field = "why";
  const auto merged = merge_results(
      route, {failed(call_outcome::circuit_open), ok({{"v", 1}}), failed(call_outcome::rejected)});
  const auto body = json::parse(merged.body);
  CHECK(body[0] == json{{"source", "inventory"},
                        {"priceCent", -1},
                        {"stock", 0},
                        {"why", "circuit_open"},
                        {"degraded", true}});
  CHECK(body[1] == json{{"source", "coupon"}, {"v", 1}, {"degraded", false}});
  CHECK(body[2] == json{{"source", "bare"}, {"why", "rejected"}, {"degraded", true}});
  CHECK(merged.degraded == "inventory;reason=circuit_open, bare;reason=rejected");
  std::vector<std::pair<std::string, std::string>> listed;
  for_each_degraded(merged.degraded, [&](std::string_view name, std::string_view reason) {
    listed.emplace_back(name, reason);
  });
  CHECK(listed == std::vector<std::pair<std::string, std::string>>{{"inventory", "circuit_open"},
                                                                   {"bare", "rejected"}});
}

TEST_CASE("merged output is valid JSON whatever the strings hold") {
  const auto route = route_with("array");
  const auto merged = merge_results(
      route, {ok({{"priceCent", "\"\n\\\u0001"}}), ok({{"k\"ey", "\xC3\xA9"}}), ok(json::object())});
  const auto body = json::parse(merged.body);
  CHECK(body[0]["priceCent"] == "\"\n\\\u0001");
  CHECK(body[1]["k\"ey"] == "\xC3\xA9");
  CHECK(merged.degraded.empty());
}

TEST_CASE("a key given twice keeps its last value, escaped keys match fields after decoding") {
  const auto route = route_with("array");
  call_result twice;
  twice.outcome = call_outcome::ok;
  REQUIRE(parse_json_object(R"({"priceCent":1,"x":0,"priceCent":2,"sour\u0063e":"spoofed"})", twice.body));
  const auto merged = merge_results(route, {twice, failed(call_outcome::error), ok(json{{"k", 1}})});
  const auto body = json::parse(merged.body);
  CHECK(body[0] == json{{"source", "inventory"}, {"priceCent", 2}, {"degraded", false}});
}

TEST_CASE("a large object keeps the last of repeated keys too") {
  const auto route = route_with("array");
  std::string text = "{";
  for (int i = 0; i < 40; ++i) text += "\"k" + std::to_string(i % 20) + "\":" + std::to_string(i) + ",";
  text += "\"priceCent\":5,\"stock\":6,\"priceCent\":7}";
  call_result big;
  big.outcome = call_outcome::ok;
  REQUIRE(parse_json_object(text, big.body));
  const auto merged = merge_results(route, {big, big, big});
  const auto body = json::parse(merged.body);
  CHECK(body[0] == json{{"source", "inventory"}, {"priceCent", 7}, {"stock", 6}, {"degraded", false}});
  REQUIRE(body[2].size() == 24);  // k0..k19, priceCent, stock, source, degraded
  CHECK(body[2]["priceCent"] == 7);
  for (int i = 0; i < 20; ++i) CHECK(body[2]["k" + std::to_string(i)] == 20 + i);
}

TEST_CASE("members are copied as received, with the spacing between them normalised") {
  const auto route = route_with("array");
  call_result spaced;
  spaced.outcome = call_outcome::ok;
  REQUIRE(parse_json_object(R"({"a":1,"b":[1, 2],"source":"x", "c" : {"d":2},"e":"f","g":true,"a":3} )",
                            spaced.body));
  const auto merged = merge_results(route, {failed(call_outcome::error), spaced, spaced});
  const std::string entry = R"("b":[1, 2],"c":{"d":2},"e":"f","g":true,"a":3,"degraded":false})";
  CHECK(merged.body == R"([{"source":"inventory","priceCent":-1,"stock":0,"degraded":true},)"
                       R"({"source":"coupon",)" +
                           entry + R"(,{"source":"bare",)" + entry + "]");
}
