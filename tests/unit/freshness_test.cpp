// How long an answer may be cached, from its Cache-Control fields: the directives, their precedence, and
// the parser collecting them from a response head.

#include "gateway/downstream/freshness.hpp"
#include "gateway/downstream/answer_cache.hpp"
#include "gateway/downstream/http_result.hpp"
#include "gateway/downstream/response_parser.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace gateway;
using namespace std::chrono_literals;

TEST_CASE("freshness: max-age, s-maxage first, and what forbids keeping an answer") {
  CHECK(freshness_seconds("max-age=60") == 60U);
  CHECK(freshness_seconds("public, max-age=60") == 60U);
  CHECK(freshness_seconds("s-maxage=10, max-age=60") == 10U);
  CHECK(freshness_seconds("MAX-AGE=\"30\"") == 30U);
  CHECK(freshness_seconds("max-age=99999999999999999999") == 86400U);
  CHECK(freshness_seconds("no-store") == 0U);
  CHECK(freshness_seconds("max-age=60, no-cache") == 0U);
  CHECK(freshness_seconds("private, max-age=5") == 0U);
  CHECK_FALSE(freshness_seconds("public"));
  CHECK_FALSE(freshness_seconds("max-age=abc"));
  CHECK_FALSE(freshness_seconds(""));
}

TEST_CASE("freshness: the response parser takes the shortest of its Cache-Control fields") {
  response_parser p(1024, 4096);
  boost::system::error_code ec;
  const std::string answer =
      "HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nCache-Control: s-maxage=20\r\n"
      "Content-Length: 2\r\n\r\n{}";
  p.put(answer, ec);
  REQUIRE(p.is_done());
  CHECK(p.fresh_for() == 20U);
  CHECK(answer_result(p.status(), std::move(p.body()), p.fresh_for()).fresh_for == 20U);

  response_parser none(1024, 4096);
  none.put("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", ec);
  REQUIRE(none.is_done());
  CHECK(none.fresh_for() == 0U);
}

TEST_CASE("freshness: a cache serving fresh answers keeps them for their seconds only") {
  answer_cache fresh(64 * 1024, 0s, true);
  const auto t0 = clock::now();
  fresh.put("/c?sku=A", json_object_from(nlohmann::json{{"a", 1}}), t0, 5);
  CHECK(fresh.get_fresh("/c?sku=A", t0 + 4s));
  CHECK_FALSE(fresh.get_fresh("/c?sku=A", t0 + 5s));
  CHECK_FALSE(fresh.get("/c?sku=A", t0 + 1s));  // max_stale 0: never served stale
  fresh.put("/c?sku=B", json_object_from(nlohmann::json{{"b", 1}}), t0, 0);
  CHECK(fresh.entries() == 1);  // nothing it would ever serve is not kept
  CHECK(fresh.hits() == 1);
}

TEST_CASE("freshness: a Vary beyond the share key makes an answer unfit to share", "[share_key]") {
  CHECK(varies_beyond_key("*"));
  CHECK(varies_beyond_key("Accept-Language, *"));
  CHECK(varies_beyond_key("x-request-id"));
  CHECK(varies_beyond_key("Accept-Language,Traceparent"));
  CHECK(varies_beyond_key(" tracestate "));
  CHECK(varies_beyond_key("X-Request-Timeout-Ms"));
  // Sent alike by every call, in the key, or never sent: the key splits what they split.
  CHECK_FALSE(varies_beyond_key(""));
  CHECK_FALSE(varies_beyond_key("Accept-Encoding"));
  CHECK_FALSE(varies_beyond_key("Accept-Language, Cookie, X-Forwarded-For"));
  CHECK_FALSE(varies_beyond_key("X-Request-Ids"));

  // The parser: any Vary field of the final head counts; an interim response's do not.
  const auto shareable = [](const std::string& head) {
    response_parser p(1024, 4096);
    boost::system::error_code ec;
    p.put(head + "Content-Length: 2\r\n\r\n{}", ec);
    REQUIRE(p.is_done());
    return p.shareable();
  };
  CHECK(shareable("HTTP/1.1 200 OK\r\nVary: Accept-Language\r\n"));
  CHECK_FALSE(shareable("HTTP/1.1 200 OK\r\nVary: Accept-Language\r\nVary: *\r\n"));
  CHECK(shareable("HTTP/1.1 103 Early Hints\r\nVary: *\r\n\r\nHTTP/1.1 200 OK\r\n"));
}
