// Fields of the downstream answers passed to the client (response_headers), against the real gateway and
// mock: allowlisted fields and cookies reach the client, others do not; the strictest Cache-Control wins;
// a degraded answer is never cacheable; a route without response_headers passes nothing.

#include "tests/support/http_client.hpp"
#include "tests/support/processes.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace test_support;

namespace {

std::string fields_config(const mock_downstream& mock, const std::string& downstream_extra = "") {
  return "server:\n  listen: 127.0.0.1:0\n  threads: 1\ndownstreams:\n  mock:\n    url: " + mock.url() +
         "\n    retry: {attempts: 1}\n" + downstream_extra + R"(routes:
  - path: /api/fields
    response: object
    response_headers:
      forward: [Content-Language, X-Cache-Tags]
      set_cookie: [session_hint, ab_group]
      cache_control: true
    calls:
      - {name: a, downstream: mock, path: '/a?sku=X'}
      - {name: b, downstream: mock, path: '/b?sku=X'}
  - path: /api/plain
    response: object
    calls:
      - {name: a, downstream: mock, path: '/a?sku=X'}
      - {name: b, downstream: mock, path: '/b?sku=X'}
)";
}

void typical_answers(mock_downstream& mock) {
  mock.set_headers("a",
                   {"Content-Language: de", "X-Cache-Tags: offer-1", "X-Secret: internal",
                    "Set-Cookie: ab_group=b; Path=/", "Set-Cookie: tracking=1", "Cache-Control: max-age=60"});
  mock.set_headers(
      "b", {"Content-Language: de", "Set-Cookie: session_hint=h2; HttpOnly", "Cache-Control: max-age=30"});
}

}  // namespace

TEST_CASE("answer fields: allowlisted fields and cookies reach the client, the least max-age wins",
          "[answer_fields]") {
  mock_downstream mock;
  typical_answers(mock);
  gateway_process gw(fields_config(mock));
  const auto r = http_get(gw.port(), "/api/fields");
  REQUIRE(r.status == 200);
  CHECK_FALSE(r.has_header("X-Degraded"));
  CHECK(r.all("Content-Language") == std::vector<std::string>{"de"});  // the same value once
  CHECK(r.all("X-Cache-Tags") == std::vector<std::string>{"offer-1"});
  CHECK_FALSE(r.has_header("X-Secret"));
  // Separate Set-Cookie fields, only the allowlisted cookies.
  CHECK(r.all("Set-Cookie") == std::vector<std::string>{"ab_group=b; Path=/", "session_hint=h2; HttpOnly"});
  CHECK(r.all("Cache-Control") == std::vector<std::string>{"max-age=30"});
  CHECK(r.all("Content-Type") == std::vector<std::string>{"application/json"});
  CHECK(r.all("Content-Length").size() == 1);

  // The default: a route without response_headers passes nothing of the answers.
  const auto plain = http_get(gw.port(), "/api/plain");
  REQUIRE(plain.status == 200);
  for (const auto* name : {"Content-Language", "X-Cache-Tags", "X-Secret", "Set-Cookie", "Cache-Control"}) {
    INFO(name);
    CHECK_FALSE(plain.has_header(name));
  }
}

TEST_CASE("answer fields: no-store from one call, or a degraded call, makes the answer no-store",
          "[answer_fields]") {
  mock_downstream mock;
  typical_answers(mock);
  gateway_process gw(fields_config(mock));
  mock.set_headers("b", {"Cache-Control: no-store", "Content-Language: fr"});
  auto r = http_get(gw.port(), "/api/fields");
  REQUIRE(r.status == 200);
  CHECK(r.all("Cache-Control") == std::vector<std::string>{"no-store"});
  CHECK(r.all("Content-Language") == std::vector<std::string>{"de", "fr"});

  // b fails: its fallback is served, nothing of it passes, and the answer must not be cached.
  typical_answers(mock);
  mock.control("b", "fail");
  r = http_get(gw.port(), "/api/fields");
  REQUIRE(r.status == 200);
  CHECK(r.degraded_reason("b") == "error");
  CHECK(r.all("Cache-Control") == std::vector<std::string>{"no-store"});
  CHECK(r.all("Set-Cookie") == std::vector<std::string>{"ab_group=b; Path=/"});

  // An answer without Cache-Control has no explicit freshness: not cacheable either.
  mock.control("b", "ok");
  mock.set_headers("b", {"Content-Language: de"});
  r = http_get(gw.port(), "/api/fields");
  REQUIRE(r.status == 200);
  CHECK_FALSE(r.has_header("X-Degraded"));
  CHECK(r.all("Cache-Control") == std::vector<std::string>{"no-store"});
}

TEST_CASE("answer fields: a value with a control never reaches the client", "[answer_fields]") {
  mock_downstream mock;
  typical_answers(mock);
  gateway_process gw(fields_config(mock));
  // Sent raw by the mock (percent-decoded from its control query): a malformed head fails the call.
  mock.set_headers("a", {std::string("X-Cache-Tags: bad\x01value"), "Cache-Control: max-age=60"});
  const auto r = http_get(gw.port(), "/api/fields");
  REQUIRE(r.status == 200);
  CHECK(r.degraded_reason("a") == "error");
  CHECK_FALSE(r.has_header("X-Cache-Tags"));
  CHECK(r.all("Cache-Control") == std::vector<std::string>{"no-store"});
  CHECK(r.all("Set-Cookie") == std::vector<std::string>{"session_hint=h2; HttpOnly"});
  // An over-long value (over 4 KiB) is dropped alone: the call still answers.
  mock.set_headers(
      "a", {"X-Cache-Tags: " + std::string(5000, 't'), "Content-Language: de", "Cache-Control: max-age=60"});
  const auto long_value = http_get(gw.port(), "/api/fields");
  REQUIRE(long_value.status == 200);
  CHECK_FALSE(long_value.has_header("X-Degraded"));
  CHECK_FALSE(long_value.has_header("X-Cache-Tags"));
  CHECK(long_value.all("Cache-Control") == std::vector<std::string>{"max-age=30"});
}

TEST_CASE("answer fields: an answer from the gateway's cache carries its fields but no cookie",
          "[answer_fields]") {
  mock_downstream mock;
  typical_answers(mock);
  gateway_process gw(fields_config(mock, "    cache: true\n"));
  const auto first = http_get(gw.port(), "/api/fields");
  REQUIRE(first.status == 200);
  CHECK(first.all("Set-Cookie").size() == 2);
  const auto second = http_get(gw.port(), "/api/fields");
  REQUIRE(second.status == 200);
  CHECK(mock.path_counter(mock.stats(), "a", "requests") == 1);  // served from the cache
  CHECK(second.all("Content-Language") == std::vector<std::string>{"de"});
  CHECK(second.all("X-Cache-Tags") == std::vector<std::string>{"offer-1"});
  CHECK(second.all("Set-Cookie").empty());
  const auto cache_control = second.header("Cache-Control");
  REQUIRE(cache_control);
  CHECK((*cache_control == "max-age=30" || *cache_control == "max-age=29"));
}
