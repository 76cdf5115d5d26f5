// A call's pass_status: a listed status from its downstream becomes the client's answer (the status, the
// downstream's JSON body or the gateway's JSON error, and the fields pass_headers names), for required and
// optional calls alike; a status not listed still falls back; the first call in the route's order that
// passes its answer (or is required and failed) decides, waiting only for the calls listed before it that
// could decide first; a passed answer wins over a hedge in flight; a passed 4xx never opens the circuit,
// a passed 5xx counts as a failure; a stale answer never replaces a passed one. Against the real gateway
// and a scripted downstream.

#include "tests/integration/metric_scrape.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/offer_checks.hpp"
#include "tests/support/processes.hpp"
#include "tests/support/scripted_downstream.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <tuple>
#include <utility>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

using steady = std::chrono::steady_clock;

// An answer and how long it took, in whole milliseconds.
std::pair<http_response, std::chrono::milliseconds> timed_get(std::uint16_t port, const std::string& target) {
  const auto start = steady::now();
  auto answer = http_get(port, target);
  return {std::move(answer), elapsed_since(start)};
}

// The answers of the scripted downstream by path (e.g. "/price"), changeable while it runs; a path without
// one answers {"ok":true}.
class answers {
 public:
  void set(const std::string& path, unsigned status, const std::string& fields, const std::string& body,
           std::chrono::milliseconds pause = 0ms) {
    std::lock_guard lock(mutex_);
    std::string bytes = "HTTP/1.1 " + std::to_string(status) +
                        " Answer\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + fields +
                        "\r\n" + body;
    by_path_[path] = {std::move(bytes), pause};
  }

  scripted_downstream::script script() {
    return [this](const scripted_downstream::request& r) -> std::vector<scripted_downstream::piece> {
      std::lock_guard lock(mutex_);
      const auto found = by_path_.find(r.target);
      if (found != by_path_.end()) return {found->second};
      return {
          {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}"}};
    };
  }

 private:
  std::mutex mutex_;
  std::map<std::string, scripted_downstream::piece> by_path_;
};

const std::string json_type = "Content-Type: application/json\r\n";
const std::string bad_token = R"({"error":"invalid_token","detail":"expired"})";
const std::string www_authenticate = R"(Bearer realm="shop", error="invalid_token")";

// One route /api/price with a call `price` (downstream d) that passes 401, 403 and 503 with
// WWW-Authenticate and Retry-After, and an optional call `stock` (downstream s, the same server, so that
// its answers do not count in d's circuit) that passes nothing.
std::string price_config(const scripted_downstream& d, bool required,
                         const std::string& downstream_extra = "") {
  return "server:\n  listen: 127.0.0.1:0\n  threads: 1\ndownstreams:\n  d:\n    url: " + d.url() +
         "\n    retry: {attempts: 1}\n" + downstream_extra + "  s:\n    url: " + d.url() + R"(
routes:
  - path: /api/price
    response: object
    deadline: 3s
    calls:
      - name: price
        downstream: d
        path: /price
        required: )" +
         (required ? "true" : "false") + R"(
        pass_status: [401, 403, 503]
        pass_headers: [WWW-Authenticate, Retry-After]
        fallback: {price: -1}
      - name: stock
        downstream: s
        path: /stock
        fallback: {stock: 0}
)";
}

void check_passed_401(const http_response& r) {
  CHECK(r.status == 401);
  CHECK(r.body == bad_token);
  CHECK(r.all("WWW-Authenticate") == std::vector<std::string>{www_authenticate});
  CHECK_FALSE(r.has_header("X-Internal"));  // not listed in pass_headers
  CHECK_FALSE(r.has_header("X-Degraded"));  // the downstream's answer, not a degraded one
  CHECK(r.all("Content-Type") == std::vector<std::string>{"application/json"});
  CHECK(r.has_header("X-Request-Id"));
}

}  // namespace

TEST_CASE("pass_status: a required call's 401 reaches the client with its body and the listed fields",
          "[pass_status]") {
  answers a;
  a.set("/price", 401, json_type + "WWW-Authenticate: " + www_authenticate + "\r\nX-Internal: secret\r\n",
        bad_token);
  scripted_downstream d(a.script());
  gateway_process gw(price_config(d, true));
  const auto r = http_get(gw.port(), "/api/price");
  check_passed_401(r);
  // The access log names the passed status, for the request and for its call.
  const std::regex line(
      R"re("path":"/api/price".*"status":401.*"calls":\[\{"name":"price","outcome":"status_4xx","status":401)re");
  CHECK(gw.process().wait_for_line(line, 2000ms).has_value());
}

TEST_CASE("pass_status: an optional call's 401 decides the whole answer", "[pass_status]") {
  answers a;
  a.set("/price", 401, json_type + "WWW-Authenticate: " + www_authenticate + "\r\nX-Internal: secret\r\n",
        bad_token);
  scripted_downstream d(a.script());
  gateway_process gw(price_config(d, false));
  check_passed_401(http_get(gw.port(), "/api/price"));
}

TEST_CASE("pass_status: a body that is not JSON gives the gateway's JSON error with the passed status",
          "[pass_status]") {
  answers a;
  a.set("/price", 403, "Content-Type: text/html\r\nWWW-Authenticate: Basic\r\n", "<h1>Forbidden</h1>");
  scripted_downstream d(a.script());
  gateway_process gw(price_config(d, false));
  const auto r = http_get(gw.port(), "/api/price");
  CHECK(r.status == 403);
  CHECK(r.all("Content-Type") == std::vector<std::string>{"application/json"});
  CHECK(r.all("WWW-Authenticate") == std::vector<std::string>{"Basic"});
  CHECK_FALSE(r.has_header("X-Degraded"));
  const auto body = r.json();
  REQUIRE(body.is_object());
  REQUIRE(body.contains("error"));
  CHECK_THAT(body["error"].get<std::string>(), Catch::Contains("price"));
  CHECK(r.body.find("Forbidden") == std::string::npos);
}

TEST_CASE("pass_status: a status not listed still falls back with 200, and a call without pass_status too",
          "[pass_status]") {
  answers a;
  a.set("/price", 404, json_type, R"({"error":"no such sku"})");
  a.set("/stock", 401, json_type + "WWW-Authenticate: Basic\r\n", bad_token);  // stock passes nothing
  scripted_downstream d(a.script());
  gateway_process gw(price_config(d, false));
  const auto r = http_get(gw.port(), "/api/price");
  CHECK(r.status == 200);
  CHECK(r.degraded_reason("price") == "error");
  CHECK(r.degraded_reason("stock") == "error");
  CHECK_FALSE(r.has_header("WWW-Authenticate"));
  CHECK(r.json()["price"]["price"] == -1);
}

TEST_CASE("pass_status: among calls that pass, the first listed decides and later ones are not waited for",
          "[pass_status]") {
  answers a;
  a.set("/first", 403, json_type, R"({"error":"forbidden"})", 300ms);
  a.set("/second", 401, json_type + "WWW-Authenticate: Basic\r\n", bad_token);
  a.set("/third", 200, json_type, R"({"late":true})", 2500ms);
  scripted_downstream d(a.script());
  const std::string config =
      "server:\n  listen: 127.0.0.1:0\n  threads: 1\ndownstreams:\n  d:\n    url: " + d.url() +
      "\n    retry: {attempts: 1}\n" + R"(routes:
  - path: /api/two
    response: object
    deadline: 3s
    calls:
      - {name: first, downstream: d, path: /first, pass_status: [403]}
      - {name: second, downstream: d, path: /second, pass_status: [401], pass_headers: [WWW-Authenticate]}
      - {name: third, downstream: d, path: /third, pass_status: [401, 403]}
)";
  gateway_process gw(config);
  auto [r, took] = timed_get(gw.port(), "/api/two");
  INFO("answered in " << took.count() << " ms");
  // The first call answers last but is listed first: its 403 is the answer, without the second's fields.
  CHECK(r.status == 403);
  CHECK(r.body == R"({"error":"forbidden"})");
  CHECK_FALSE(r.has_header("WWW-Authenticate"));
  CHECK(took >= 250ms);
  CHECK(took < 1500ms);  // the third call, listed after the deciding one, was cancelled

  // The first call answers well: the second's 401 decides, once the first has answered.
  a.set("/first", 200, json_type, R"({"fine":true})", 300ms);
  std::tie(r, took) = timed_get(gw.port(), "/api/two");
  INFO("answered in " << took.count() << " ms");
  CHECK(r.status == 401);
  CHECK(r.body == bad_token);
  CHECK(r.all("WWW-Authenticate") == std::vector<std::string>{"Basic"});
  CHECK(took >= 250ms);
  CHECK(took < 1500ms);
}

TEST_CASE(
    "pass_status: a call that passes decides before a required call listed after it whatever comes first",
    "[pass_status]") {
  answers a;
  a.set("/auth", 401, json_type + "WWW-Authenticate: Basic\r\n", bad_token, 300ms);
  a.set("/broken", 500, json_type, R"({"error":"boom"})");
  a.set("/slow", 200, json_type, R"({"late":true})", 2500ms);
  scripted_downstream d(a.script());
  const std::string config =
      "server:\n  listen: 127.0.0.1:0\n  threads: 1\ndownstreams:\n  d:\n    url: " + d.url() +
      "\n    retry: {attempts: 1}\n" + R"(routes:
  - path: /api/order
    response: object
    deadline: 3s
    calls:
      - {name: auth, downstream: d, path: /auth, pass_status: [401]}
      - {name: broken, downstream: d, path: /broken, required: true}
  - path: /api/late
    response: object
    deadline: 3s
    calls:
      - {name: slow, downstream: d, path: /slow}
      - {name: auth, downstream: d, path: /auth, pass_status: [401]}
)";
  gateway_process gw(config);
  // The required call fails at once, but the call listed before it may still pass its answer: it is
  // waited for, and its 401 decides.
  auto [r, took] = timed_get(gw.port(), "/api/order");
  INFO("answered in " << took.count() << " ms");
  CHECK(r.status == 401);
  CHECK(r.body == bad_token);
  CHECK(took >= 250ms);
  // An optional call without pass_status listed first cannot decide: it is cancelled, not waited for.
  std::tie(r, took) = timed_get(gw.port(), "/api/late");
  INFO("answered in " << took.count() << " ms");
  CHECK(r.status == 401);
  CHECK(took < 1500ms);
  // The auth call answers well: the required call's failure decides (502).
  a.set("/auth", 200, json_type, R"({"user":"u1"})");
  r = http_get(gw.port(), "/api/order");
  CHECK(r.status == 502);
  CHECK_THAT(r.body, Catch::Contains("required call 'broken' failed"));
}

TEST_CASE("pass_status: passed 401s never open the circuit, passed 503s count as failures",
          "[pass_status][breaker]") {
  answers a;
  a.set("/price", 401, json_type + "WWW-Authenticate: Basic\r\n", bad_token);
  scripted_downstream d(a.script());
  gateway_process gw(price_config(
      d, false, "    circuit_breaker: {consecutive_failures: 3, min_calls: 1000, cooldown: 30s}\n"));
  for (int i = 0; i < 6; ++i) {
    INFO("request " << i);
    CHECK(http_get(gw.port(), "/api/price").status == 401);
  }
  CHECK(metric(gw, "gateway_circuit_state", {{"downstream", "d"}}) == 0);
  a.set("/price", 200, json_type, R"({"price":12})");
  auto r = http_get(gw.port(), "/api/price");
  CHECK(r.status == 200);
  CHECK_FALSE(r.has_header("X-Degraded"));

  // A passed 503 is still the downstream failing: it reaches the client (with its Retry-After, not the
  // gateway's own) and counts against the circuit, which opens after three in a row.
  a.set("/price", 503, json_type + "Retry-After: 7\r\n", R"({"error":"overloaded"})");
  for (int i = 0; i < 3; ++i) {
    INFO("request " << i);
    r = http_get(gw.port(), "/api/price");
    CHECK(r.status == 503);
    CHECK(r.all("Retry-After") == std::vector<std::string>{"7"});
  }
  CHECK(metric(gw, "gateway_circuit_state", {{"downstream", "d"}}) == 2);
  r = http_get(gw.port(), "/api/price");
  CHECK(r.status == 200);
  CHECK(r.degraded_reason("price") == "circuit_open");
}

TEST_CASE("pass_status: a passed answer wins at once over a hedged attempt still in flight",
          "[pass_status][hedge]") {
  // The first attempt of the price call answers 401 after 150 ms; its hedge, sent after 50 ms, never does.
  std::atomic<int> price_asked{0};
  scripted_downstream d([&](const scripted_downstream::request& r)
                            -> std::vector<scripted_downstream::piece> {
    if (r.target != "/price")
      return {
          {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}"}};
    if (price_asked++ == 0) {
      return {{"HTTP/1.1 401 Unauthorized\r\n" + json_type +
                   "Content-Length: " + std::to_string(bad_token.size()) + "\r\n\r\n" + bad_token,
               150ms}};
    }
    return {{"", 2800ms}};
  });
  gateway_process gw(price_config(d, true, "    hedge: {delay: 50ms, budget_percent: 100}\n"));
  const auto [r, took] = timed_get(gw.port(), "/api/price");
  INFO("answered in " << took.count() << " ms");
  CHECK(r.status == 401);
  CHECK(r.body == bad_token);
  CHECK(price_asked == 2);  // the hedge went out
  CHECK(took < 1500ms);     // not when the hedge gave up, nor at the deadline (3 s)
}

TEST_CASE("pass_status: a passed answer is never replaced by a stale one", "[pass_status][stale]") {
  answers a;
  a.set("/price", 200, json_type, R"({"price":12})");
  scripted_downstream d(a.script());
  gateway_process gw(price_config(d, false, "    stale_if_error: {max_stale: 60s}\n"));
  auto r = http_get(gw.port(), "/api/price");
  REQUIRE(r.status == 200);
  CHECK(r.json()["price"]["price"] == 12);
  a.set("/price", 401, json_type + "WWW-Authenticate: " + www_authenticate + "\r\n", bad_token);
  check_passed_401(http_get(gw.port(), "/api/price"));
  // A status not passed is a failure: the stale answer is served as before.
  a.set("/price", 500, json_type, R"({"error":"boom"})");
  r = http_get(gw.port(), "/api/price");
  CHECK(r.status == 200);
  CHECK(r.degraded_reason("price") == "stale");
}
