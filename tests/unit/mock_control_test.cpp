// The mock's runtime controls (/__control, /__mode), per-endpoint behaviours and counters, prefixes,
// seeded tails, the ok body's echo of the query and the body of mode items.

#include "loadtest/mock/control.hpp"
#include "loadtest/mock/handle_request.hpp"
#include "loadtest/mock/replies.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <vector>

using namespace mock;
using namespace std::chrono_literals;

namespace {

control_request control(std::string_view query, control_kind kind = control_kind::control) {
  std::string error;
  auto req = parse_control(query, kind, error);
  INFO(query << ": " << error);
  REQUIRE(req.has_value());
  return *req;
}

std::string control_error(std::string_view query, control_kind kind = control_kind::control) {
  std::string error;
  CHECK_FALSE(parse_control(query, kind, error).has_value());
  return error;
}

request_action get(path_registry& registry, std::string_view target, std::size_t endpoint = 0,
                   bool is_get = true, bool is_post = false) {
  return handle_request({is_get, is_post, false, target, {}, endpoint}, registry);
}

}  // namespace

TEST_CASE("mock control: /__control parameters", "[mock]") {
  const auto full = control("path=coupon&mode=fail&latency=1ms%2Cp50%3D300ms&port=9002");
  CHECK(full.path == "coupon");
  CHECK(full.change.how == mode::fail);
  REQUIRE(full.change.delay.has_value());
  CHECK(full.change.delay->pick(500'000) == microseconds(300ms));
  CHECK(full.port == 9002);
  CHECK_FALSE(full.change.body.has_value());

  const auto delay_only = control("path=coupon&delay=1ms,p50=300ms");  // commas need no escape
  CHECK_FALSE(delay_only.change.how.has_value());
  CHECK(delay_only.change.delay->tail_size == 1);
  CHECK(delay_only.port == 0);

  const auto body = control("path=coupon&body=%7B%22a%22%3A%5B1%2C2%5D%7D");
  CHECK(body.change.body == R"({"a":[1,2]})");
  CHECK(control("path=coupon&body=").change.body == "");
}

TEST_CASE("mock control: bad /__control queries", "[mock]") {
  CHECK(control_error("mode=ok") == "bad or missing path");
  CHECK(control_error("path=a*b&mode=ok") == "bad or missing path");
  CHECK(control_error("path=coupon&mode=slow") == "bad or missing mode");
  CHECK(control_error("path=coupon&mode=ok&color=red") == "unknown parameter 'color'");
  CHECK(control_error("path=coupon&mode=ok&delay=1ms&latency=2ms") == "give delay or latency, not both");
  CHECK(control_error("path=coupon&latency=1ms,p200=2ms").starts_with("bad delay: bad percentile"));
  CHECK(control_error("path=coupon&mode=ok&port=0") == "bad port");
  CHECK(control_error("path=coupon&mode=ok&port=70000") == "bad port");
  CHECK(control_error("path=coupon&body=%7Bnot") == "body is not JSON");
  CHECK(control_error("path=coupon&body=%zz") == "bad percent-encoding in body");
  CHECK(control_error("path=coupon").starts_with("nothing to change"));
}

TEST_CASE("mock control: header fields per path", "[mock]") {
  auto req =
      control("path=coupon&header=X-Tag%3A%20a&header=Set-Cookie:ab=1%3B%20Path%3D/&header=X-Ctl:a%01b");
  REQUIRE(req.change.headers);
  CHECK(*req.change.headers ==
        "X-Tag: a\r\nSet-Cookie: ab=1; Path=/\r\nX-Ctl: a\x01"
        "b\r\n");
  req = control("path=coupon&header=");
  CHECK(req.change.headers == std::string());
  CHECK(control_error("path=coupon&header=bad name:1").starts_with("bad header"));
  CHECK(control_error("path=coupon&header=X:a%0D%0Ab").starts_with("bad header"));
  CHECK(control_error("path=coupon&header=novalue").starts_with("bad header"));

  path_registry registry(latency{}, {8080}, 1);
  path_change change;
  change.headers = "X-Tag: a\r\n";
  REQUIRE(registry.configure("coupon", change).empty());
  const auto t = registry.begin_request("coupon", {}, 0);
  REQUIRE(t.headers != nullptr);
  CHECK(*t.headers == "X-Tag: a\r\n");
  std::string head;
  append_head(head, 200, 2, true, "application/json", {}, *t.headers);
  CHECK(head.ends_with("Connection: keep-alive\r\nX-Tag: a\r\n\r\n"));
}

TEST_CASE("mock control: /__mode keeps its contract", "[mock]") {
  const auto req = control("path=coupon&mode=hang&delay=10ms&whatever=1", control_kind::mode);
  CHECK(req.change.how == mode::hang);
  CHECK(req.change.delay->base == microseconds(10ms));
  CHECK(control_error("path=coupon&delay=10ms", control_kind::mode) == "bad or missing mode");
  const auto ignored = control("path=coupon&mode=ok&port=5&body=x", control_kind::mode);
  CHECK(ignored.port == 0);
  CHECK_FALSE(ignored.change.body.has_value());
}

TEST_CASE("mock control: /__control answers GET and POST", "[mock]") {
  path_registry registry(latency{}, {9001}, 1);
  CHECK(get(registry, "/__control?path=coupon&mode=fail").status == 200);
  CHECK(get(registry, "/__control?path=coupon&mode=ok", 0, false, true).status == 200);
  const auto put = get(registry, "/__control?path=coupon&mode=ok", 0, false, false);
  CHECK(put.status == 405);
  CHECK(put.close);
  CHECK(get(registry, "/__mode?path=coupon&mode=ok", 0, false, true).status == 405);
  const auto bad_port = get(registry, "/__control?path=coupon&mode=ok&port=9002");
  CHECK(bad_port.status == 400);
  CHECK(bad_port.body == R"({"error":"no endpoint listens on port 9002"})");
}

TEST_CASE("mock control: one endpoint overridden, the others shared", "[mock]") {
  path_registry registry(latency{microseconds(5ms)}, {9001, 9002}, 1);
  REQUIRE(registry.configure("coupon", {mode::fail, std::nullopt, std::nullopt}, 9002).empty());
  CHECK(get(registry, "/coupon?sku=A", 0).ticket.how.how == mode::ok);
  CHECK(get(registry, "/coupon?sku=A", 1).ticket.how.how == mode::fail);
  CHECK(get(registry, "/coupon?sku=A", 1).ticket.how.delay == microseconds(5ms));

  // A change without a port reaches every endpoint, the overridden one too, field by field.
  REQUIRE(registry.configure("coupon", {std::nullopt, latency{microseconds(7ms)}, std::nullopt}).empty());
  const auto shared = get(registry, "/coupon?sku=A", 0);
  const auto overridden = get(registry, "/coupon?sku=A", 1);
  CHECK(shared.ticket.how.delay == microseconds(7ms));
  CHECK(overridden.ticket.how.delay == microseconds(7ms));
  CHECK(overridden.ticket.how.how == mode::fail);
  REQUIRE(registry.configure("coupon", {mode::ok, std::nullopt, std::nullopt}).empty());
  CHECK(get(registry, "/coupon?sku=A", 1).ticket.how.how == mode::ok);

  registry.count_cancelled(overridden.ticket);
  const auto stats = nlohmann::json::parse(registry.stats_json());
  INFO(stats.dump());
  CHECK(stats["requests"] == 6);
  CHECK(stats["cancelled"] == 1);
  CHECK(stats["paths"]["coupon"]["requests"] == 6);
  CHECK(stats["endpoints"]["9001"]["requests"] == 2);
  CHECK(stats["endpoints"]["9002"]["requests"] == 4);
  CHECK(stats["endpoints"]["9001"]["cancelled"] == 0);
  CHECK(stats["endpoints"]["9002"]["cancelled"] == 1);
  CHECK(stats["endpoints"]["9002"]["paths"]["coupon"]["cancelled"] == 1);
  CHECK(stats["endpoints"]["9001"]["paths"]["coupon"]["requests"] == 2);
  // bench.sh reads the last "requests" in the text as the total.
  const auto text = registry.stats_json();
  CHECK(text.substr(text.rfind(R"("requests":)")) == R"("requests":6})");
}

TEST_CASE("mock control: a path's body replaces the generated one", "[mock]") {
  path_registry registry(latency{}, {9001, 9002}, 1);
  REQUIRE(registry.configure("coupon", {std::nullopt, std::nullopt, R"({"x":1})"}, 9001).empty());
  const auto own = get(registry, "/coupon?sku=A", 0);
  REQUIRE(own.ticket.body);
  CHECK(own.ticket.body->text() == R"({"x":1})");
  CHECK_FALSE(get(registry, "/coupon?sku=A", 1).ticket.body);
  REQUIRE(registry.configure("coupon", {std::nullopt, std::nullopt, ""}).empty());
  CHECK_FALSE(get(registry, "/coupon?sku=A", 0).ticket.body);
  // A request in flight keeps its body while the path changes.
  REQUIRE(registry.configure("coupon", {std::nullopt, std::nullopt, R"({"y":2})"}).empty());
  CHECK(own.ticket.body->text() == R"({"x":1})");
  CHECK(get(registry, "/coupon?sku=A", 1).ticket.body->text() == R"({"y":2})");
  const std::string huge(path_registry::max_body_bytes, ' ');
  CHECK(registry.configure("coupon", {std::nullopt, std::nullopt, huge}).starts_with("too many bodies"));
}

TEST_CASE("mock control: tails repeat with the seed and restart on reset", "[mock]") {
  const auto delays = [](path_registry& registry) {
    std::vector<long long> out;
    for (int i = 0; i < 32; ++i) out.push_back(get(registry, "/coupon?sku=A").ticket.how.delay.count());
    return out;
  };
  std::string error;
  const auto tail = *parse_latency("1ms,p50=300ms", error);
  path_registry a(latency{}, {9001}, 7);
  path_registry b(latency{}, {9001}, 7);
  path_registry c(latency{}, {9001}, 8);
  for (auto* r : {&a, &b, &c}) REQUIRE(r->configure("coupon", {mode::ok, tail, std::nullopt}).empty());
  const auto first = delays(a);
  CHECK(first == delays(b));
  CHECK(first != delays(c));
  const auto slow = std::count(first.begin(), first.end(), 300'000);
  CHECK(slow > 4);
  CHECK(slow < 28);
  a.reset();
  CHECK(delays(a) == first);
}

TEST_CASE("mock replies: the ok body echoes query parameters other than sku", "[mock]") {
  const std::string plain = R"({"source":"coupon","sku":"A1","priceCent":1259,"stock":959})";
  std::string out;
  append_ok_body(out, "coupon", "A1");
  CHECK(out == plain);
  out.clear();
  append_ok_body(out, "coupon", "A1", "sku=A1");
  CHECK(out == plain);  // byte for byte what it was
  out.clear();
  append_ok_body(out, "coupon", "A1", "sku=A1&&");
  CHECK(out == plain);

  out.clear();
  append_ok_body(out, "coupon", "A1", "x=2&sku=A1&y=%41+b&x=3&z&w=%zz&q=%22");
  CHECK(out == R"({"source":"coupon","sku":"A1","priceCent":1259,"stock":959,)"
               R"("query":{"q":"\"","w":"%zz","x":"2","y":"A+b","z":""}})");
  CHECK(nlohmann::json::accept(out));

  path_registry registry(latency{}, {9001}, 1);
  const auto act = get(registry, "/coupon?sku=A1&region=eu");
  CHECK(act.downstream);
  CHECK(act.query == "sku=A1&region=eu");
}

TEST_CASE("mock control: a prefix answers the paths under it that have no settings of their own", "[mock]") {
  path_registry registry(latency{}, {9001, 9002}, 1);
  CHECK(get(registry, "/__control?path=seller/*&mode=fail").status == 200);
  CHECK(get(registry, "/__control?path=seller/vip/*&mode=unavailable&delay=3ms").status == 200);
  CHECK(get(registry, "/__control?path=seller/17&mode=hang").status == 200);
  CHECK(get(registry, "/__control?path=seller*&mode=ok").status == 400);
  CHECK(get(registry, "/__control?path=seller/**&mode=ok").status == 400);

  CHECK(get(registry, "/seller/18").ticket.how.how == mode::fail);
  CHECK(get(registry, "/seller/a/b").ticket.how.how == mode::fail);
  CHECK(get(registry, "/seller/vip/1").ticket.how.how == mode::unavailable);  // the longest prefix
  CHECK(get(registry, "/seller/vip/1").ticket.how.delay == microseconds(3ms));
  CHECK(get(registry, "/seller/17").ticket.how.how == mode::hang);  // an exact setting wins
  CHECK(get(registry, "/seller").ticket.how.how == mode::ok);       // not under "seller/"
  CHECK(get(registry, "/seller/").ticket.how.how == mode::ok);
  CHECK(get(registry, "/sellers/1").ticket.how.how == mode::ok);

  // Later changes to the prefix reach the paths it answers, those already requested too; a port override
  // of the prefix applies to its endpoint only.
  REQUIRE(registry.configure("seller/*", {mode::flaky, std::nullopt, std::nullopt}).empty());
  CHECK(get(registry, "/seller/18").ticket.how.how == mode::ok);  // its 2nd request: flaky counts per path
  CHECK(get(registry, "/seller/30").ticket.how.how == mode::unavailable);
  CHECK(get(registry, "/seller/31").ticket.how.how == mode::unavailable);
  CHECK(get(registry, "/seller/30").ticket.how.how == mode::ok);
  REQUIRE(registry.configure("seller/*", {mode::garbage, std::nullopt, std::nullopt}, 9002).empty());
  CHECK(get(registry, "/seller/30", 1).ticket.how.how == mode::garbage);
  CHECK(get(registry, "/seller/30", 0).ticket.how.how == mode::ok);  // its 4th

  // A prefix's body serves every path under it; an exact setting of a path later takes it out.
  REQUIRE(registry.configure("item/*", {std::nullopt, std::nullopt, R"({"x":1})"}).empty());
  const auto body = get(registry, "/item/5").ticket.body;
  REQUIRE(body);
  CHECK(body->text() == R"({"x":1})");
  REQUIRE(registry.configure("item/5", {mode::ok, std::nullopt, std::nullopt}).empty());
  CHECK_FALSE(get(registry, "/item/5").ticket.body);
  CHECK(get(registry, "/item/6").ticket.body == body);

  // The counters stay per requested path; the prefixes are settings, not paths.
  const auto stats = nlohmann::json::parse(registry.stats_json());
  INFO(stats.dump());
  CHECK(stats["paths"]["seller/18"]["requests"] == 2);
  CHECK(stats["paths"]["seller/30"]["requests"] == 4);
  CHECK(stats["paths"]["seller/vip/1"]["requests"] == 2);
  CHECK(stats["endpoints"]["9002"]["paths"]["seller/30"]["requests"] == 1);
  CHECK_FALSE(stats["paths"].contains("seller/*"));
}

TEST_CASE("mock control: a prefix still answers when the path table is full", "[mock]") {
  path_registry registry(latency{}, {9001}, 1);
  REQUIRE(registry.configure("author/*", {mode::fail, std::nullopt, std::nullopt}).empty());
  for (std::size_t i = 0; i < path_registry::max_paths; ++i) get(registry, "/p/" + std::to_string(i));
  const auto untracked = get(registry, "/author/1").ticket;
  CHECK(untracked.entry == nullptr);
  CHECK(untracked.how.how == mode::fail);
  CHECK(get(registry, "/other").ticket.how.how == mode::ok);
}

TEST_CASE("mock replies: mode items answers `count` items named after the path", "[mock]") {
  CHECK(parse_mode("items") == mode::items);
  CHECK(control("path=reviews&mode=items").change.how == mode::items);

  std::string out;
  CHECK(append_items_body(out, "reviews", "product=7"));
  CHECK(out == R"({"source":"reviews","count":3,"items":[{"id":"reviews-0","n":0},{"id":"reviews-1","n":1},)"
               R"({"id":"reviews-2","n":2}]})");
  out.clear();
  CHECK(append_items_body(out, "a/b", "count=0"));
  CHECK(out == R"({"source":"a/b","count":0,"items":[]})");
  out.clear();
  CHECK(append_items_body(out, "r", "count=%31"));  // percent-decoded: 1
  CHECK(out == R"({"source":"r","count":1,"items":[{"id":"r-0","n":0}]})");

  out.clear();
  REQUIRE(append_items_body(out, "r", "count=10000"));
  const auto big = nlohmann::json::parse(out);
  CHECK(big["count"] == 10000);
  REQUIRE(big["items"].size() == 10000);
  CHECK(big["items"][9999] == nlohmann::json{{"id", "r-9999"}, {"n", 9999}});

  for (std::string_view bad : {"count=10001", "count=-1", "count=", "count=3x", "count=+3", "count=%zz",
                               "count=99999999999999999999999"}) {
    INFO(bad);
    out.clear();
    CHECK_FALSE(append_items_body(out, "r", bad));
    CHECK(out == R"({"error":"bad count: give 0 to 10000"})");
  }
}
