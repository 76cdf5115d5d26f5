// Composed calls against the real gateway and mock: calls that wait for others (`after`) and take values
// of their answers, run once per element of an array (`for_each`) or under a condition (`when`); what a
// failure, a deadline or a leaving client does to the calls that wait; hostile values; the shaping of
// entries; and composition with retries and the cache. The mock's counters tell which calls were sent.

#include "tests/integration/metric_scrape.hpp"
#include "tests/support/offer_checks.hpp"
#include "tests/support/text_edit.hpp"

#include <cctype>
#include <set>
#include <string>
#include <vector>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

// A config with one downstream "mock" (and `extra_downstreams`, as YAML lines under `downstreams:`) and
// the given routes (YAML lines under `routes:`).
std::string composed_config(const mock_downstream& mock, const std::string& routes,
                            const std::string& extra_downstreams = "", int threads = 2) {
  return "server:\n  listen: 127.0.0.1:0\n  threads: " + std::to_string(threads) +
         "\ndownstreams:\n  mock:\n    url: " + mock.url() + "\n    connect_timeout: 500ms\n" +
         extra_downstreams + "routes:\n" + routes;
}

// product -> seller (by the product's sellerId) and reviews (by its id) -> one author per review.
const std::string product_graph = R"(  - path: /api/product/{id}
    method: GET
    deadline: 2s
    response: object
    degraded_reason_field: reason
    calls:
      - {name: product, downstream: mock, path: '/product/{id}', fallback: {title: none}}
      - {name: seller, downstream: mock, path: '/seller/{product.sellerId}', after: [product],
         fallback: {name: unknown}}
      - {name: reviews, downstream: mock, path: '/reviews?product={product.id}&count=2', after: [product],
         fallback: {count: 0}}
      - {name: authors, downstream: mock, path: '/author/{item.id}', after: [reviews],
         for_each: '{reviews.items}', fallback: {name: anonymous}}
)";

// Bodies that echo the path's segments, so an answer shows which request the gateway sent.
void serve_product_bodies(mock_downstream& mock) {
  mock.set_body("product/*", R"({"id":"{seg.1}","sellerId":"s-42","title":"product {seg.1}"})");
  mock.set_body("seller/*", R"({"id":"{seg.1}","name":"seller {seg.1}"})");
  mock.set_body("author/*", R"({"id":"{seg.1}","name":"author of {seg.1}"})");
  mock.control("reviews", "items");
}

// Requests the mock received on paths that start with `prefix`.
long long requests_under(const nlohmann::json& stats, const std::string& prefix) {
  long long n = 0;
  if (!stats.contains("paths")) return 0;
  for (const auto& [path, value] : stats["paths"].items()) {
    if (path.rfind(prefix, 0) == 0 && value.contains("requests")) n += value["requests"].get<long long>();
  }
  return n;
}

// Every byte outside A-Z a-z 0-9 - _ ~ as %XX: how the gateway writes a value into one path segment.
std::string one_segment(const std::string& s) {
  return percent_encoded(s, "-_~");
}

// The keys of a JSON value and of the objects inside it, without the values: two answers with the same
// shape give the same text.
std::string shape_of(const nlohmann::json& j) {
  if (!j.is_object()) return "_";
  std::string out = "{";
  for (const auto& [key, value] : j.items()) out += key + ":" + shape_of(value) + ",";
  return out + "}";
}

}  // namespace

TEST_CASE("a three-level graph passes each answer's values to the calls that wait for it", "[composition]") {
  mock_downstream mock;
  serve_product_bodies(mock);
  gateway_process gw(composed_config(mock, product_graph));

  const auto r = http_get(gw.port(), "/api/product/p1");
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK(r.degraded_calls() == std::nullopt);
  const auto body = r.json();
  CHECK(body["product"] == nlohmann::json::parse(
                               R"({"source":"product","id":"p1","sellerId":"s-42","title":"product p1",
                                   "degraded":false})"));
  CHECK(body["seller"] ==
        nlohmann::json::parse(R"({"source":"seller","id":"s-42","name":"seller s-42","degraded":false})"));
  CHECK(body["reviews"]["items"].size() == 2);
  CHECK(body["reviews"]["degraded"] == false);
  CHECK(body["authors"] == nlohmann::json::parse(R"({"source":"authors","items":[
          {"id":"reviews-0","name":"author of reviews-0","degraded":false},
          {"id":"reviews-1","name":"author of reviews-1","degraded":false}],
        "truncated":false,"degraded":false})"));

  const auto stats = mock.stats();
  INFO(stats["paths"].dump());
  CHECK(mock.path_counter(stats, "product/p1", "requests") == 1);
  CHECK(mock.path_counter(stats, "seller/s-42", "requests") == 1);
  CHECK(mock.path_counter(stats, "reviews", "requests") == 1);
  CHECK(mock.path_counter(stats, "author/reviews-0", "requests") == 1);
  CHECK(mock.path_counter(stats, "author/reviews-1", "requests") == 1);
}

TEST_CASE("a failed call degrades every call that needs it, directly or not, and none of them is sent",
          "[composition]") {
  mock_downstream mock;
  serve_product_bodies(mock);
  mock.control("product/*", "fail");
  gateway_process gw(composed_config(mock, product_graph));

  const auto r = http_get(gw.port(), "/api/product/p1");
  INFO(r.body << "\nX-Degraded: " << r.header("x-degraded").value_or("(none)"));
  REQUIRE(r.status == 200);
  CHECK(r.degraded_reason("product") == "error");
  CHECK(r.degraded_reason("seller") == "dependency");
  CHECK(r.degraded_reason("reviews") == "dependency");
  CHECK(r.degraded_reason("authors") == "dependency");
  const auto body = r.json();
  CHECK(body["product"] ==
        nlohmann::json::parse(R"({"source":"product","title":"none","reason":"error","degraded":true})"));
  CHECK(
      body["seller"] ==
      nlohmann::json::parse(R"({"source":"seller","name":"unknown","reason":"dependency","degraded":true})"));
  CHECK(body["reviews"] ==
        nlohmann::json::parse(R"({"source":"reviews","count":0,"reason":"dependency","degraded":true})"));
  // No review, no element: the for_each entry is an empty list, degraded for its dependency.
  CHECK(body["authors"]["items"] == nlohmann::json::array());
  CHECK(body["authors"]["reason"] == "dependency");
  CHECK(body["authors"]["degraded"] == true);

  const auto stats = mock.stats();
  INFO(stats["paths"].dump());
  CHECK(mock.path_counter(stats, "product/p1", "requests") == 1);
  CHECK(requests_under(stats, "seller") == 0);
  CHECK(requests_under(stats, "reviews") == 0);
  CHECK(requests_under(stats, "author") == 0);
}

namespace {

// seller is required and needs product; product's timeout is short.
std::string required_after_config(const mock_downstream& mock) {
  return composed_config(mock, R"(  - path: /api/product/{id}
    method: GET
    deadline: 3s
    response: object
    calls:
      - {name: product, downstream: mock, path: '/product/{id}', timeout: 150ms, fallback: {title: none}}
      - {name: seller, downstream: mock, path: '/seller/{product.sellerId}', after: [product], required: true,
         fallback: {name: unknown}}
)");
}

}  // namespace

TEST_CASE("a required call whose dependency failed answers 502 at once, naming the dependency",
          "[composition]") {
  mock_downstream mock;
  serve_product_bodies(mock);
  mock.control("product/*", "fail");
  gateway_process gw(required_after_config(mock));

  const auto start = steady_clock::now();
  const auto r = http_get(gw.port(), "/api/product/p1");
  const auto took = elapsed_since(start);
  INFO(r.body << "\nanswered in " << took.count() << " ms");
  CHECK(r.status == 502);
  CHECK(r.body.find("product") != std::string::npos);
  CHECK(took < 1000ms);  // the deadline is 3 s away
  CHECK(requests_under(mock.stats(), "seller") == 0);
}

TEST_CASE("a required call whose dependency timed out answers 504, well before the deadline",
          "[composition]") {
  mock_downstream mock;
  serve_product_bodies(mock);
  mock.control("product/*", "hang");
  gateway_process gw(required_after_config(mock));

  const auto start = steady_clock::now();
  const auto r = http_get(gw.port(), "/api/product/p1");
  const auto took = elapsed_since(start);
  INFO(r.body << "\nanswered in " << took.count() << " ms");
  CHECK(r.status == 504);
  CHECK(r.body.find("product") != std::string::npos);
  CHECK(took >= 150ms);  // product's own timeout
  CHECK(took < 1500ms);  // the deadline is 3 s away
  CHECK(requests_under(mock.stats(), "seller") == 0);
}

TEST_CASE("gateway --check refuses a broken graph at the line that breaks it", "[composition][cli]") {
  struct broken {
    std::string what;
    std::string calls;    // the route's calls
    std::string at;       // text of the line the problem is reported at
    std::string message;  // part of the message
    std::string response = "object";
  };
  const std::vector<broken> cases = {
      {"a cycle",
       "      - name: a\n        downstream: mock\n        path: /a\n        after: [b]\n"
       "      - name: b\n        downstream: mock\n        path: /b\n        after:  [a]\n",
       "after:  [a]", "calls form a cycle: a -> b -> a"},
      {"an unknown name in after",
       "      - name: a\n        downstream: mock\n        path: /a\n        after: [nosuch]\n", "[nosuch]",
       "unknown call 'nosuch'"},
      {"a call naming itself",
       "      - name: a\n        downstream: mock\n        path: /a\n        after: [a]\n", "after: [a]",
       "names itself"},
      {"a reference to a call that is not in after",
       "      - name: a\n        downstream: mock\n        path: /a\n"
       "      - name: b\n        downstream: mock\n        path: '/b/{a.id}'\n",
       "/b/{a.id}", "not in this call's after"},
      {"a reference naming no call",
       "      - name: a\n        downstream: mock\n        path: /a\n"
       "      - name: b\n        downstream: mock\n        path: '/b/{x.y}'\n        after: [a]\n",
       "/b/{x.y}", "names no call"},
      {"an element reference without for_each",
       "      - name: a\n        downstream: mock\n        path: /a\n"
       "      - name: b\n        downstream: mock\n        path: '/b/{item.id}'\n        after: [a]\n",
       "/b/{item.id}", "no for_each"},
      {"a group in an array response",
       "      - name: a\n        downstream: mock\n        path: /a\n        group: g\n", "group: g",
       "needs an object response", "array"},
      {"flattened fields that collide",
       "      - name: a\n        downstream: mock\n        path: /a\n        fields: [x]\n        flatten: "
       "true\n"
       "      - name: b\n        downstream: mock\n        path: /b\n        fields: [x]\n        flatten:  "
       "true\n",
       "flatten:  true", "collides with the same field of call 'a'"},
  };
  temp_dir dir;
  for (const auto& c : cases) {
    const std::string yaml =
        "server:\n  listen: 127.0.0.1:0\ndownstreams:\n  mock:\n    url: http://127.0.0.1:9\nroutes:\n"
        "  - path: /api/x\n    method: GET\n    response: " +
        c.response + "\n    calls:\n" + c.calls;
    const auto file = dir.write("graph.yaml", yaml);
    const auto result = run_command({GATEWAY_BIN, "--check", file}, 10s);
    INFO(c.what << "\nconfig:\n" << yaml << "\nstderr: " << result.err);
    CHECK(result.status.exited);
    CHECK(result.status.code == 2);
    const int line = line_of(yaml, c.at);
    REQUIRE(line > 0);
    // "FILE:LINE:COL: message", the column being where the faulty value starts.
    const std::regex expected("(^|\n)" +
                              std::regex_replace(file, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") + ":" +
                              std::to_string(line) + ":[0-9]+: [^\n]*" +
                              std::regex_replace(c.message, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)"));
    CHECK(std::regex_search(result.err, expected));
  }
}

namespace {

// reviews asks the mock for {n} items; authors runs once per item, at most three.
std::string for_each_config(const mock_downstream& mock) {
  return composed_config(mock, R"(  - path: /api/reviews/{n}
    method: GET
    deadline: 2s
    params:
      n: {pattern: '^[0-9]{1,4}$'}
    response: object
    degraded_reason_field: reason
    calls:
      - {name: reviews, downstream: mock, path: '/reviews?count={n}', fallback: {count: 0}}
      - {name: authors, downstream: mock, path: '/author/{item.id}', after: [reviews],
         for_each: '{reviews.items}', max_items: 3, concurrency: 2, fallback: {name: anonymous}}
)");
}

}  // namespace

TEST_CASE("for_each runs one call per element, up to max_items, and says when it left elements out",
          "[composition]") {
  mock_downstream mock;
  serve_product_bodies(mock);
  gateway_process gw(for_each_config(mock));

  struct round {
    int elements;
    std::size_t calls;
    bool truncated;
  };
  for (const auto& [elements, calls, truncated] :
       {round{0, 0, false}, round{1, 1, false}, round{3, 3, false}, round{4, 3, true}}) {
    const auto before = requests_under(mock.stats(), "author/");
    const auto r = http_get(gw.port(), "/api/reviews/" + std::to_string(elements));
    INFO(elements << " elements: " << r.body);
    REQUIRE(r.status == 200);
    CHECK(r.degraded_calls() == std::nullopt);
    const auto authors = r.json()["authors"];
    CHECK(authors["source"] == "authors");
    REQUIRE(authors["items"].size() == calls);
    for (std::size_t i = 0; i < calls; ++i) {
      const auto id = "reviews-" + std::to_string(i);
      CHECK(authors["items"][i] ==
            nlohmann::json{{"id", id}, {"name", "author of " + id}, {"degraded", false}});
    }
    CHECK(authors["truncated"] == truncated);
    CHECK(authors["degraded"] == false);
    CHECK(requests_under(mock.stats(), "author/") - before == static_cast<long long>(calls));
  }
  CHECK(mock.path_counter(mock.stats(), "author/reviews-3", "requests") == 0);
}

TEST_CASE("for_each: one element's failed call degrades that element only, with its fallback",
          "[composition]") {
  mock_downstream mock;
  serve_product_bodies(mock);
  mock.control("author/reviews-1", "fail");  // its own setting: no longer follows author/*
  gateway_process gw(for_each_config(mock));

  const auto r = http_get(gw.port(), "/api/reviews/3");
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK(r.degraded_reason("authors") == "error");
  CHECK(r.degraded_reason("reviews") == std::nullopt);
  const auto authors = r.json()["authors"];
  REQUIRE(authors["items"].size() == 3);
  CHECK(authors["items"][0] ==
        nlohmann::json::parse(R"({"id":"reviews-0","name":"author of reviews-0","degraded":false})"));
  CHECK(authors["items"][1] ==
        nlohmann::json::parse(R"({"name":"anonymous","reason":"error","degraded":true})"));
  CHECK(authors["items"][2] ==
        nlohmann::json::parse(R"({"id":"reviews-2","name":"author of reviews-2","degraded":false})"));
  CHECK(authors["truncated"] == false);
  CHECK(authors["degraded"] == true);
  CHECK(mock.path_counter(mock.stats(), "author/reviews-1", "requests") == 1);
}

namespace {

// product -> seller -> rating: three levels in a row.
std::string chain_config(const mock_downstream& mock, const std::string& deadline) {
  return composed_config(mock, R"(  - path: /api/product/{id}
    method: GET
    deadline: )" + deadline + R"(
    response: object
    calls:
      - {name: product, downstream: mock, path: '/product/{id}', fallback: {title: none}}
      - {name: seller, downstream: mock, path: '/seller/{product.sellerId}', after: [product],
         fallback: {name: unknown}}
      - {name: rating, downstream: mock, path: '/rating/{seller.id}', after: [seller], fallback: {stars: 0}}
)");
}

}  // namespace

TEST_CASE("the deadline in the middle of the graph cancels the running call and sends none of the waiting",
          "[composition][deadline]") {
  mock_downstream mock;
  serve_product_bodies(mock);
  mock.control("product/*", "ok", "150ms");
  mock.control("seller/*", "ok", "200ms");
  gateway_process gw(chain_config(mock, "200ms"));

  const auto start = steady_clock::now();
  const auto r = http_get(gw.port(), "/api/product/p1");
  const auto took = elapsed_since(start);
  INFO(r.body << "\nX-Degraded: " << r.header("x-degraded").value_or("(none)") << "\nanswered in "
              << took.count() << " ms");
  REQUIRE(r.status == 200);
  CHECK(took < 350ms);  // the deadline and 150 ms
  CHECK(r.degraded_reason("product") == std::nullopt);
  CHECK(r.degraded_reason("seller") == "timeout");
  CHECK(r.degraded_reason("rating").has_value());
  const auto body = r.json();
  CHECK(body["seller"]["name"] == "unknown");
  CHECK(body["rating"]["stars"] == 0);

  const auto stats =
      mock.wait_stats([&](const auto& s) { return mock.path_counter(s, "seller/s-42", "cancelled") == 1; });
  INFO(stats["paths"].dump());
  CHECK(mock.path_counter(stats, "seller/s-42", "cancelled") == 1);
  CHECK(requests_under(stats, "rating") == 0);
}

TEST_CASE("a waiting call's own timeout counts from its start, not from the request's",
          "[composition][deadline]") {
  mock_downstream mock;
  serve_product_bodies(mock);
  mock.control("product/*", "ok", "300ms");
  mock.control("seller/*", "ok", "50ms");
  // seller may take 250 ms once started: it starts at about 300 ms and answers at about 350 ms, long after
  // 250 ms from the request's start.
  gateway_process gw(composed_config(mock, R"(  - path: /api/product/{id}
    method: GET
    deadline: 3s
    response: object
    calls:
      - {name: product, downstream: mock, path: '/product/{id}', fallback: {title: none}}
      - {name: seller, downstream: mock, path: '/seller/{product.sellerId}', after: [product], timeout: 250ms,
         fallback: {name: unknown}}
)"));

  const auto r = http_get(gw.port(), "/api/product/p1");
  INFO(r.body << "\nX-Degraded: " << r.header("x-degraded").value_or("(none)"));
  REQUIRE(r.status == 200);
  CHECK(r.degraded_calls() == std::nullopt);
  CHECK(mock.path_counter(mock.stats(), "seller/s-42", "requests") == 1);
}

TEST_CASE("a call that starts later with its own timeout is cut off at that timeout, not at the deadline",
          "[composition][deadline]") {
  mock_downstream mock;
  serve_product_bodies(mock);
  mock.control("product/*", "ok", "50ms");
  mock.control("seller/*", "ok", "1s");
  // The fan-out's timer is set for the route's deadline (3 s) before seller starts; seller's own 150 ms,
  // counted from its start, comes due long before.
  gateway_process gw(composed_config(mock, R"(  - path: /api/product/{id}
    method: GET
    deadline: 3s
    response: object
    calls:
      - {name: product, downstream: mock, path: '/product/{id}', fallback: {title: none}}
      - {name: seller, downstream: mock, path: '/seller/{product.sellerId}', after: [product], timeout: 150ms,
         fallback: {name: unknown}}
)"));

  const auto start = steady_clock::now();
  const auto r = http_get(gw.port(), "/api/product/p1");
  const auto took = elapsed_since(start);
  INFO(r.body << "\nanswered in " << took.count() << " ms");
  REQUIRE(r.status == 200);
  CHECK(r.degraded_reason("seller") == "timeout");
  CHECK(took < 700ms);  // product's 50 ms, seller's 150 ms and a generous margin; not seller's 1 s
}

TEST_CASE("a client leaving mid-graph cancels the running call and no later level is sent",
          "[composition][cancel]") {
  mock_downstream mock;
  serve_product_bodies(mock);
  mock.control("seller/*", "ok", "1s");
  gateway_process gw(chain_config(mock, "5s"));

  http_connection conn(gw.port());
  conn.send_request("GET", "/api/product/p1");
  auto stats =
      mock.wait_stats([&](const auto& s) { return mock.path_counter(s, "seller/s-42", "requests") == 1; });
  REQUIRE(mock.path_counter(stats, "seller/s-42", "requests") == 1);
  conn.close();

  const auto closed_at = steady_clock::now();
  stats =
      mock.wait_stats([&](const auto& s) { return mock.path_counter(s, "seller/s-42", "cancelled") == 1; });
  INFO(stats["paths"].dump() << "\ncancelled " << elapsed_since(closed_at).count() << " ms after the close");
  CHECK(mock.path_counter(stats, "seller/s-42", "cancelled") == 1);
  CHECK(elapsed_since(closed_at) < 900ms);  // before seller's answer was due
  // Past the time seller would have answered: still nothing of the third level.
  stats = mock.wait_stats([&](const auto& s) { return requests_under(s, "rating") > 0; }, 1500ms);
  CHECK(requests_under(stats, "rating") == 0);
  CHECK(gw.running());
}

namespace {

// "ü€😀" in UTF-8: two, three and four bytes.
const std::string unicode_text = "\xC3\xBC\xE2\x82\xAC\xF0\x9F\x98\x80";

// The product's values, each hostile in its own way (as their JSON in hostile_product holds them).
const std::vector<std::pair<std::string, std::string>> hostile_values = {
    {"quote", "a\"b'c"},       {"slash", "a/../b"}, {"query", "x?y=1&z=2"}, {"hash", "h#1"},
    {"space", "a b+c"},        {"pct", "100%25"},   {"uni", unicode_text},  {"dots", ".."},
    {"escaped", "\xC3\xA9\n"}, {"num", "12.5"},     {"neg", "-3"},          {"exp", "1e3"},
    {"yes", "true"},           {"no", "false"}};

const std::string hostile_product = R"({"quote":"a\"b'c","slash":"a/../b","query":"x?y=1&z=2","hash":"h#1",
  "space":"a b+c","pct":"100%25","uni":"ü€😀","dots":"..","escaped":"\u00e9\n","num":12.5,"neg":-3,"exp":1e3,
  "yes":true,"no":false,"nothing":null,"obj":{"a":1},"list":[1],"ctl":"a\u0001b","empty":"",)"
                                    R"("long":")" +
                                    std::string(2049, 'x') + R"("})";

std::string hostile_config(const mock_downstream& mock) {
  std::string calls =
      "      - {name: product, downstream: mock, path: /product, fallback: {title: none}}\n"
      "      - {name: query, downstream: mock, path: '/q?v={product.query}&h={product.hash}&u={product.uni}"
      "&p={product.pct}', after: [product], fallback: {v: none}}\n"
      "      - {name: header, downstream: mock, path: /h, after: [product], fallback: {h: none},\n"
      "         headers: {set: {X-Value: 'v={product.quote} {product.uni}'}}}\n"
      "      - {name: header_ctl, downstream: mock, path: /hc, after: [product], fallback: {h: none},\n"
      "         headers: {set: {X-Value: '{product.ctl}'}}}\n"
      "      - name: post\n        downstream: mock\n        method: POST\n        path: /post\n"
      "        after: [product]\n        fallback: {p: none}\n"
      "        body_template: {quote: '{product.quote}', slash: '{product.slash}', uni: '{product.uni}',\n"
      "                        escaped: '{product.escaped}', ctl: '{product.ctl}', hash: '{product.hash}'}\n";
  for (const auto& [key, value] : hostile_values) {
    calls += "      - {name: seg_" + key + ", downstream: mock, path: '/v/" + key + "/{product." + key +
             "}', after: [product], fallback: {v: none}}\n";
  }
  calls +=
      "      - {name: query_empty, downstream: mock, path: '/qe?v={product.empty}', after: [product],"
      " fallback: {v: none}}\n";
  for (const std::string key : {"nothing", "obj", "list", "absent", "empty", "long"}) {
    calls += "      - {name: seg_" + key + ", downstream: mock, path: '/v/" + key + "/{product." + key +
             "}', after: [product], fallback: {v: none}}\n";
  }
  return composed_config(mock,
                         "  - path: /api/hostile\n    method: GET\n    deadline: 3s\n"
                         "    response: object\n    degraded_reason_field: reason\n    calls:\n" +
                             calls);
}

}  // namespace

TEST_CASE(
    "hostile values of an answer reach the next call as one path segment, one query value, "
    "one header value and JSON-escaped body strings",
    "[composition]") {
  mock_downstream mock({"--record-headers", "x-value"});
  mock.set_body("product", hostile_product);
  mock.set_body("q", R"({"v":"{query.v}","h":"{query.h}","u":"{query.u}","p":"{query.p}"})");
  gateway_process gw(hostile_config(mock));

  const auto r = http_get(gw.port(), "/api/hostile");
  INFO(r.body << "\nX-Degraded: " << r.header("x-degraded").value_or("(none)"));
  REQUIRE(r.status == 200);
  const auto body = r.json();
  const auto stats = mock.stats();
  INFO(stats["paths"].dump());

  SECTION("path segments: every value encoded whole, so none adds a segment, a query or a fragment") {
    for (const auto& [key, value] : hostile_values) {
      INFO(key);
      CHECK(r.degraded_reason("seg_" + key) == std::nullopt);
      CHECK(mock.path_counter(stats, "v/" + key + "/" + one_segment(value), "requests") == 1);
    }
    CHECK(requests_under(stats, "v/") == static_cast<long long>(hostile_values.size()));
  }
  SECTION(
      "null, an object, an array, a missing field, an empty path segment (it would name the collection) or "
      "a value over 2 KiB in a path: the call is not sent (dependency)") {
    for (const std::string key : {"nothing", "obj", "list", "absent", "empty", "long"}) {
      INFO(key);
      CHECK(r.degraded_reason("seg_" + key) == "dependency");
      CHECK(body["seg_" + key]["v"] == "none");
      CHECK(requests_under(stats, "v/" + key) == 0);
    }
  }
  SECTION("query values: each arrives whole, as written; an empty one too") {
    CHECK(r.degraded_reason("query") == std::nullopt);
    CHECK(r.degraded_reason("query_empty") == std::nullopt);
    CHECK(mock.path_counter(stats, "qe", "requests") == 1);
    CHECK(body["query"]["v"] == "x?y=1&z=2");
    CHECK(body["query"]["h"] == "h#1");
    CHECK(body["query"]["u"] == unicode_text);
    CHECK(body["query"]["p"] == "100%25");
  }
  SECTION("header values: taken as they are; a control character stops the call (dependency)") {
    CHECK(r.degraded_reason("header") == std::nullopt);
    CHECK(stats["paths"]["h"]["last_headers"]["x-value"] == "v=a\"b'c " + unicode_text);
    CHECK(r.degraded_reason("header_ctl") == "dependency");
    CHECK(requests_under(stats, "hc") == 0);
  }
  SECTION("a built body: each string value JSON-escaped, parsing back to the same members") {
    CHECK(r.degraded_reason("post") == std::nullopt);
    const auto sent = stats["paths"]["post"]["last_headers"]["@body"].get<std::string>();
    INFO(sent);
    CHECK(nlohmann::json::parse(sent) == nlohmann::json{{"quote", "a\"b'c"},
                                                        {"slash", "a/../b"},
                                                        {"uni", unicode_text},
                                                        {"escaped", "\xC3\xA9\n"},
                                                        {"ctl", std::string("a\x01") + "b"},
                                                        {"hash", "h#1"}});
  }
}

TEST_CASE("shaped entries keep one shape whether the answer or the fallback fills them", "[composition]") {
  mock_downstream mock;
  mock.set_body("info", R"({"data":{"item":{"name":"lamp","price":25}},"meta":1})");
  mock.set_body("price", R"({"amount":25,"currency":"EUR","meta":2})");
  mock.set_body("tax", R"({"rate":0.2})");
  mock.set_body("extra", R"({"color":"red","size":3,"internal":"x"})");
  gateway_process gw(composed_config(mock, R"(  - path: /api/shaped
    method: GET
    deadline: 2s
    response: object
    rename: {size: dimension}
    omit: [meta]
    calls:
      - {name: info, downstream: mock, path: /info, target: data.item, fallback: {name: none, price: 0}}
      - {name: price, downstream: mock, path: /price, group: pricing, rename: {amount: price_amount},
         fallback: {amount: -1, currency: none}}
      - {name: tax, downstream: mock, path: /tax, group: pricing, fallback: {rate: 0}}
      - {name: extra, downstream: mock, path: /extra, flatten: true, omit: [internal],
         fallback: {color: none, size: 0, internal: none}}
)"));

  const auto good = http_get(gw.port(), "/api/shaped");
  INFO(good.body);
  REQUIRE(good.status == 200);
  CHECK(good.degraded_calls() == std::nullopt);
  CHECK(good.json() == nlohmann::json::parse(R"({
          "info":{"source":"info","name":"lamp","price":25,"degraded":false},
          "pricing":{"price_amount":25,"currency":"EUR","rate":0.2,"degraded":false},
          "color":"red","dimension":3})"));

  for (const auto* call : {"info", "price", "tax", "extra"}) mock.control(call, "fail");
  const auto fallen = http_get(gw.port(), "/api/shaped");
  INFO(fallen.body);
  REQUIRE(fallen.status == 200);
  CHECK(fallen.degraded_calls() == "info,price,tax,extra");
  CHECK(fallen.json() == nlohmann::json::parse(R"({
          "info":{"source":"info","name":"none","price":0,"degraded":true},
          "pricing":{"price_amount":-1,"currency":"none","rate":0,"degraded":true},
          "color":"none","dimension":0})"));
  CHECK(shape_of(fallen.json()) == shape_of(good.json()));

  // An answer without the target is replaced by the fallback too, in the same shape.
  for (const auto* call : {"info", "price", "tax", "extra"}) mock.control(call, "ok");
  mock.set_body("info", R"({"data":{"other":1}})");
  const auto untargeted = http_get(gw.port(), "/api/shaped");
  INFO(untargeted.body);
  CHECK(untargeted.degraded_reason("info") == "target");
  CHECK(untargeted.json()["info"] ==
        nlohmann::json::parse(R"({"source":"info","name":"none","price":0,"degraded":true})"));
  CHECK(shape_of(untargeted.json()) == shape_of(good.json()));
}

TEST_CASE("when: a false condition leaves the call and the calls that need it out, not degraded",
          "[composition]") {
  mock_downstream mock;
  serve_product_bodies(mock);
  gateway_process gw(composed_config(mock, R"(  - path: /api/product/{id}
    method: GET
    deadline: 2s
    params:
      stock: {pattern: ''}
    response: object
    calls:
      - {name: product, downstream: mock, path: '/product/{id}', fallback: {title: none}}
      - {name: stock, downstream: mock, path: '/stock/{id}', when: '{stock}', fallback: {n: 0}}
      - {name: seller, downstream: mock, path: '/seller/{product.sellerId}', after: [product],
         when: '{product.sellerId}', fallback: {name: unknown}}
      - {name: promo, downstream: mock, path: '/promo/{product.id}', after: [product], when: '{product.onSale}',
         fallback: {off: 0}}
      - {name: promo_terms, downstream: mock, path: '/terms/{promo.id}', after: [promo], fallback: {text: none}}
)"));

  for (const std::string query : {"", "?stock=", "?stock=false"}) {
    const auto r = http_get(gw.port(), "/api/product/p1" + query);
    INFO(query << ": " << r.body);
    REQUIRE(r.status == 200);
    CHECK(r.degraded_calls() == std::nullopt);
    const auto body = r.json();
    CHECK(body.contains("product"));
    CHECK(body.contains("seller"));  // its condition holds: a non-empty string
    CHECK_FALSE(body.contains("stock"));
    CHECK_FALSE(body.contains("promo"));
    CHECK_FALSE(body.contains("promo_terms"));
  }
  const auto r = http_get(gw.port(), "/api/product/p1?stock=1");
  INFO(r.body);
  CHECK(r.json().contains("stock"));
  const auto stats = mock.stats();
  CHECK(mock.path_counter(stats, "stock/p1", "requests") == 1);
  CHECK(requests_under(stats, "promo") == 0);
  CHECK(requests_under(stats, "terms") == 0);
}

namespace {

// product on a downstream that retries 503 (the default), seller on one that caches its answers.
std::string shared_config(const mock_downstream& mock) {
  return composed_config(mock, R"(  - path: /api/product/{id}
    method: GET
    deadline: 2s
    response: object
    calls:
      - {name: product, downstream: catalog, path: '/product/{id}', fallback: {title: none}}
      - {name: seller, downstream: sellers, path: '/seller/{product.sellerId}', after: [product],
         fallback: {name: unknown}}
)",
                         "  catalog:\n    url: " + mock.url() +
                             "\n    retry: {attempts: 2, on_status: [503]}\n  sellers:\n    url: " +
                             mock.url() + "\n    cache: true\n");
}

}  // namespace

TEST_CASE("a dependency answered on its retry still feeds the call that needs it", "[composition][retry]") {
  mock_downstream mock;
  serve_product_bodies(mock);
  mock.control("product/*", "flaky");  // the 1st, 3rd, ... request 503, the others ok
  gateway_process gw(shared_config(mock));

  const auto r = http_get(gw.port(), "/api/product/p1");
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK(r.degraded_calls() == std::nullopt);
  CHECK(r.json()["seller"]["name"] == "seller s-42");
  const auto stats = mock.stats();
  CHECK(mock.path_counter(stats, "product/p1", "requests") == 2);
  CHECK(mock.path_counter(stats, "seller/s-42", "requests") == 1);
}

TEST_CASE("a dependent call on a caching downstream is answered from the cache the second time",
          "[composition][cache]") {
  mock_downstream mock({"--cache-control", "public, max-age=60"});
  serve_product_bodies(mock);
  gateway_process gw(shared_config(mock));

  for (int i = 0; i < 2; ++i) {
    const auto r = http_get(gw.port(), "/api/product/p1");
    INFO("request " << i << ": " << r.body);
    REQUIRE(r.status == 200);
    CHECK(r.degraded_calls() == std::nullopt);
    CHECK(r.json()["seller"]["name"] == "seller s-42");
  }
  const auto stats = mock.stats();
  CHECK(mock.path_counter(stats, "product/p1", "requests") == 2);  // catalog does not cache
  CHECK(mock.path_counter(stats, "seller/s-42", "requests") == 1);
}

TEST_CASE("a dependent call on a coalescing downstream shares one request with an identical one in flight",
          "[composition][coalesce]") {
  mock_downstream mock;
  serve_product_bodies(mock);
  mock.control("seller/*", "ok", "300ms");
  // One I/O thread: every identical call meets the others. Two products of the same seller.
  gateway_process gw(composed_config(mock, R"(  - path: /api/product/{id}
    method: GET
    deadline: 2s
    response: object
    calls:
      - {name: product, downstream: mock, path: '/product/{id}', fallback: {title: none}}
      - {name: seller, downstream: sellers, path: '/seller/{product.sellerId}', after: [product],
         fallback: {name: unknown}}
)",
                                     "  sellers:\n    url: " + mock.url() + "\n    coalesce: true\n", 1));

  http_connection first(gw.port());
  first.send_request("GET", "/api/product/p1");
  mock.wait_stats([&](const auto& s) { return mock.path_counter(s, "seller/s-42", "requests") == 1; });
  http_connection second(gw.port());
  second.send_request("GET", "/api/product/p2");
  for (auto* conn : {&first, &second}) {
    const auto r = conn->read_response(5s);
    INFO(r.body);
    CHECK(r.status == 200);
    CHECK(r.degraded_calls() == std::nullopt);
    CHECK(r.json()["seller"]["name"] == "seller s-42");
  }
  const auto stats = mock.stats();
  CHECK(mock.path_counter(stats, "product/p1", "requests") == 1);
  CHECK(mock.path_counter(stats, "product/p2", "requests") == 1);
  CHECK(mock.path_counter(stats, "seller/s-42", "requests") == 1);
}

TEST_CASE("for_each element calls are hedged like any call: a slow first attempt is overtaken",
          "[composition][hedge]") {
  mock_downstream mock;
  serve_product_bodies(mock);
  // A fifth of each author's answers take 600 ms; the hedge goes after 50 ms.
  mock.control("author/*", "ok", "10ms,p80=600ms");
  gateway_process gw(composed_config(
      mock, R"(  - path: /api/product/{id}
    method: GET
    deadline: 2s
    response: object
    calls:
      - {name: reviews, downstream: mock, path: '/reviews?count=5'}
      - {name: authors, downstream: people, path: '/author/{item.id}', after: [reviews],
         for_each: '{reviews.items}', fallback: {name: anonymous}}
)",
      "  people:\n    url: " + mock.url() + "\n    hedge: {delay: 50ms, budget_percent: 100}\n"));

  constexpr int requests = 16;
  int slow = 0;
  for (int i = 0; i < requests; ++i) {
    const auto start = steady_clock::now();
    const auto r = http_get(gw.port(), "/api/product/p1");
    INFO(r.body);
    REQUIRE(r.status == 200);
    CHECK(r.degraded_calls() == std::nullopt);
    CHECK(r.json()["authors"]["items"].size() == 5);
    if (elapsed_since(start) > 400ms) ++slow;
  }
  const auto hedges = metric(gw, "gateway_downstream_hedges_total", {{"downstream", "people"}});
  CHECK(hedges >= 1);
  CHECK(requests_under(mock.stats(), "author/") == 5 * requests + static_cast<long long>(hedges));
  // A request is slow only when one of its five elements drew the slow answer on both attempts (about 18%
  // of them); unhedged, two in three would be.
  CHECK(slow <= requests / 2);
}

TEST_CASE(
    "a client leaving while for_each elements run cancels every one, and the waiting ones are never sent",
    "[composition][cancel]") {
  mock_downstream mock;
  serve_product_bodies(mock);
  mock.control("author/*", "ok", "1s");
  // Six elements, three at a time: three run when the client leaves, three wait.
  gateway_process gw(composed_config(mock, R"(  - path: /api/product/{id}
    method: GET
    deadline: 5s
    response: object
    calls:
      - {name: reviews, downstream: mock, path: '/reviews?count=6'}
      - {name: authors, downstream: mock, path: '/author/{item.id}', after: [reviews],
         for_each: '{reviews.items}', concurrency: 3, fallback: {name: anonymous}}
)"));

  http_connection conn(gw.port());
  conn.send_request("GET", "/api/product/p1");
  auto stats = mock.wait_stats([&](const auto& s) { return requests_under(s, "author/") == 3; });
  REQUIRE(requests_under(stats, "author/") == 3);
  conn.close();

  stats = mock.wait_stats([&](const auto& s) {
    long long cancelled = 0;
    for (int e = 0; e < 6; ++e)
      cancelled += mock.path_counter(s, "author/reviews-" + std::to_string(e), "cancelled");
    return cancelled == 3;
  });
  INFO(stats["paths"].dump());
  for (int e = 0; e < 3; ++e)
    CHECK(mock.path_counter(stats, "author/reviews-" + std::to_string(e), "cancelled") == 1);
  // Past the time the first three would have answered: the other three were never sent.
  stats = mock.wait_stats([&](const auto& s) { return requests_under(s, "author/") > 3; }, 1500ms);
  CHECK(requests_under(stats, "author/") == 3);
  CHECK(gw.running());
}
