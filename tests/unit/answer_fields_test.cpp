// Answer fields for the client: the strictest Cache-Control of the calls (a table), Set-Cookie by cookie
// name, forwarded fields and their order, what the response parser keeps (values checked, sizes capped),
// and the response_headers section of the configuration.

#include "gateway/downstream/answer_fields.hpp"
#include "gateway/config/config_json.hpp"
#include "gateway/config/config_loader.hpp"
#include "gateway/downstream/response_parser.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

using namespace gateway;

namespace {

cache_part answered(std::string_view cache_control) {
  cache_part p;
  p.answered = true;
  p.directives = parse_cache_directives(cache_control);
  return p;
}

cache_part answered_without() {
  cache_part p;
  p.answered = true;
  return p;
}

cache_part degraded() {
  return cache_part{};
}

call_result ok_with(std::string headers) {
  call_result r;
  r.outcome = call_outcome::ok;
  r.headers = std::move(headers);
  return r;
}

aggregate_route route_with(std::vector<response_header_policy> policies, bool cache_control) {
  aggregate_route route;
  route.response_headers.cache_control = cache_control;
  for (auto& p : policies) {
    call_settings call;
    p.cache_control = cache_control;
    call.effective_response_headers = std::move(p);
    route.calls.push_back(std::move(call));
  }
  route.passes_response_headers = true;
  return route;
}

// What the parser keeps of `head` (a whole answer with an empty body) under `policy` (and `pass`, the
// statuses a call passes with their fields).
std::string kept(const std::string& fields, const response_header_policy& policy, unsigned status = 200,
                 const passed_answer_policy* pass = nullptr) {
  response_parser parser(1024, 64 * 1024);
  parser.capture({&policy, pass});
  const std::string wire =
      "HTTP/1.1 " + std::to_string(status) + " X\r\n" + fields + "Content-Length: 0\r\n\r\n";
  boost::system::error_code ec;
  parser.put(wire, ec);
  REQUIRE(!ec);
  REQUIRE(parser.is_done());
  return parser.captured();
}

}  // namespace

TEST_CASE("answer fields: the strictest Cache-Control of the calls", "[answer_fields]") {
  struct row {
    std::vector<cache_part> parts;
    std::string expected;
  };
  const std::vector<row> table{
      {{answered("max-age=60"), answered("max-age=30")}, "max-age=30"},
      {{answered("public, max-age=60")}, "max-age=60"},
      {{answered("max-age=60"), answered("no-store")}, "no-store"},
      {{answered("max-age=60"), degraded()}, "no-store"},
      {{answered("max-age=60"), answered_without()}, "no-store"},
      {{answered("max-age=60"), answered("public")}, "no-store"},  // no explicit freshness
      {{answered("max-age=60"), answered("private, max-age=120")}, "private, max-age=60"},
      {{answered("max-age=60"), answered("no-cache")}, "no-cache"},
      {{answered("private"), answered("no-cache")}, "no-store"},  // private alone: no freshness
      {{answered("private, no-cache"), answered("max-age=5")}, "private, no-cache"},
      {{answered("max-age=60, s-maxage=300"), answered("max-age=30")}, "max-age=30"},
      {{answered("max-age=60, s-maxage=10"), answered("max-age=30")}, "max-age=30, s-maxage=10"},
      {{answered("s-maxage=20")}, "max-age=20"},
      {{answered("max-age=60, must-revalidate"), answered("max-age=90")}, "max-age=60, must-revalidate"},
      {{answered("max-age=abc")}, "no-store"},
      {{answered("max-age=\"40\"")}, "max-age=40"},
      {{answered("max-age=10, max-age=50")}, "max-age=10"},
      {{answered("max-age=99999999999")}, "max-age=2147483648"},
      {{answered("no-cache=\"Set-Cookie, X\", max-age=5")}, "no-cache"},
      {{answered("NO-STORE")}, "no-store"},
      {{}, "no-store"},
  };
  for (const auto& r : table) {
    INFO(r.expected);
    CHECK(strictest_cache_control(r.parts) == r.expected);
  }
  // An answer from the gateway's cache counts its lifetimes less its age.
  auto cached = answered("max-age=60, s-maxage=100");
  cached.age = 48;
  CHECK(strictest_cache_control({cached, answered("max-age=30")}) == "max-age=12, s-maxage=30");
  cached.age = 70;
  CHECK(strictest_cache_control({cached}) == "max-age=0, s-maxage=30");
}

TEST_CASE("answer fields: Set-Cookie passed by cookie name, each as a field of its own", "[answer_fields]") {
  CHECK(cookie_name("ab_group=b; Path=/; Max-Age=60") == "ab_group");
  CHECK(cookie_name(" sid = 1") == "sid");
  CHECK(cookie_name("novalue").empty());
  response_header_policy policy;
  policy.set_cookie = {"ab_group", "session_hint"};
  const auto route = route_with({policy, policy}, false);
  const std::vector<call_result> results{
      ok_with("Set-Cookie: ab_group=b; Path=/\r\nSet-Cookie: sid=secret\r\nSet-Cookie: AB_GROUP=x\r\n"),
      ok_with("Set-Cookie: session_hint=1, 2\r\nSet-Cookie: ab_group=b; Path=/\r\n")};
  CHECK(answer_fields(route, results) ==
        "Set-Cookie: ab_group=b; Path=/\r\nSet-Cookie: session_hint=1, 2\r\n");  // exact repeat once
  CHECK(without_set_cookie("X-A: 1\r\nset-cookie: a=1\r\nX-B: 2\r\n") == "X-A: 1\r\nX-B: 2\r\n");
}

TEST_CASE("answer fields: the parser tells whether it kept a cookie (its answer is then one client's)",
          "[answer_fields][share_key]") {
  response_header_policy policy;
  policy.set_cookie = {"sess"};
  policy.forward = {"X-Tag"};
  const auto kept_cookie = [&](const std::string& fields) {
    response_parser parser(1024, 64 * 1024);
    parser.capture({&policy});
    boost::system::error_code ec;
    parser.put("HTTP/1.1 200 OK\r\n" + fields + "Content-Length: 0\r\n\r\n", ec);
    REQUIRE(parser.is_done());
    return parser.captured_cookie();
  };
  CHECK(kept_cookie("set-cookie: sess=v1\r\n"));
  CHECK(kept_cookie("X-Tag: a\r\nSet-Cookie: other=1\r\nSet-Cookie: sess=v1\r\n"));
  CHECK_FALSE(kept_cookie("Set-Cookie: other=1\r\nX-Tag: a\r\n"));  // not kept: nobody gets it
  CHECK_FALSE(kept_cookie("X-Tag: a\r\n"));
}

TEST_CASE("answer fields: forwarded fields in call order, distinct values once, none from degraded calls",
          "[answer_fields]") {
  response_header_policy first;
  first.forward = {"Content-Language", "X-Cache-Tags"};
  response_header_policy second;
  second.forward = {"content-language"};
  auto route = route_with({first, second, first}, true);
  std::vector<call_result> results{
      ok_with("content-language: de\r\nX-Cache-Tags: a, b\r\nCache-Control: max-age=60\r\n"),
      ok_with("CONTENT-LANGUAGE: de\r\nX-Cache-Tags: not-listed-here\r\nContent-Language: fr\r\n"
              "Cache-Control: max-age=30\r\n"),
      ok_with("Content-Language: en\r\n")};
  results[2].outcome = call_outcome::stale;  // degraded: passes nothing, the answer is not cacheable
  CHECK(answer_fields(route, results) ==
        "Content-Language: de\r\nX-Cache-Tags: a, b\r\ncontent-language: fr\r\nCache-Control: no-store\r\n");
  results[2].outcome = call_outcome::ok;
  results[2].headers = "Cache-Control: max-age=45\r\n";
  CHECK(answer_fields(route, results) ==
        "Content-Language: de\r\nX-Cache-Tags: a, b\r\ncontent-language: "
        "fr\r\nCache-Control: max-age=30\r\n");
  route.passes_response_headers = false;
  CHECK(answer_fields(route, results).empty());
}

TEST_CASE("answer fields: the parser keeps only named fields of valid text within the caps",
          "[answer_fields]") {
  response_header_policy policy;
  policy.forward = {"X-Tag", "X-Big"};
  policy.set_cookie = {"ab"};
  policy.cache_control = true;
  CHECK(
      kept(
          "X-Tag: one\r\nX-Other: no\r\nSet-Cookie: ab=1\r\nSet-Cookie: zz=2\r\nCache-Control: max-age=5\r\n",
          policy) == "X-Tag: one\r\nSet-Cookie: ab=1\r\nCache-Control: max-age=5\r\n");
  // A value with a control (DEL, NUL, ...) makes the head malformed: the whole answer is refused, as
  // before (the call fails), so no such value can reach a client.
  for (const char control : {'\x7f', '\x01', '\0'}) {
    response_parser parser(1024, 64 * 1024);
    parser.capture({&policy});
    boost::system::error_code ec;
    parser.put("HTTP/1.1 200 OK\r\nX-Tag: a" + std::string(1, control) + "b\r\nContent-Length: 0\r\n\r\n",
               ec);
    CHECK(ec);
    CHECK(parser.captured().empty());
  }
  // obs-text is text: kept as it came.
  CHECK(kept("X-Tag: caf\xc3\xa9\r\n", policy) == "X-Tag: caf\xc3\xa9\r\n");
  // A value over 4 KiB is dropped; the whole kept text stays within 16 KiB.
  CHECK(kept("X-Big: " + std::string(4097, 'v') + "\r\nX-Tag: t\r\n", policy) == "X-Tag: t\r\n");
  std::string many;
  for (int i = 0; i < 6; ++i) many += "X-Big: " + std::string(4000, static_cast<char>('a' + i)) + "\r\n";
  const auto capped = kept(many, policy);
  CHECK(capped.size() <= max_kept);
  CHECK(capped.size() > 3 * 4000);
  // An interim response's fields are not the answer's.
  response_parser parser(1024, 64 * 1024);
  parser.capture({&policy});
  boost::system::error_code ec;
  parser.put(
      "HTTP/1.1 103 Early\r\nX-Tag: early\r\n\r\nHTTP/1.1 200 OK\r\nX-Tag: final\r\nContent-Length: "
      "0\r\n\r\n",
      ec);
  REQUIRE(parser.is_done());
  CHECK(parser.captured() == "X-Tag: final\r\n");
  // Without a policy nothing is kept.
  response_parser plain(1024, 64 * 1024);
  plain.put("HTTP/1.1 200 OK\r\nX-Tag: x\r\nContent-Length: 0\r\n\r\n", ec);
  CHECK(plain.captured().empty());
}

TEST_CASE("answer fields: response_headers in the configuration", "[answer_fields]") {
  const std::string head = R"(downstreams:
  d: {url: 'http://127.0.0.1:9001'}
routes:
  - path: /a
)";
  const std::string calls = R"(    calls:
      - name: c
        downstream: d
        path: /c
        response_headers: {forward: [X-Call], set_cookie: [hint]}
      - {name: e, downstream: d, path: /e}
)";
  auto loaded = load_config_text(head + R"(    response_headers:
      forward: [Content-Language, X-Cache-Tags, content-language]
      set_cookie: [ab_group]
      cache_control: true
)" + calls,
                                 "t.yaml");
  REQUIRE(loaded.errors.empty());
  const auto& route = std::get<aggregate_route>(loaded.config->routes[0].kind);
  CHECK(route.passes_response_headers);
  const auto& c = route.calls[0].effective_response_headers;
  CHECK(c.forward == std::vector<std::string>{"Content-Language", "X-Cache-Tags", "X-Call"});
  CHECK(c.set_cookie == std::vector<std::string>{"ab_group", "hint"});
  CHECK(c.cache_control);
  CHECK(route.calls[1].effective_response_headers.forward.size() == 2);
  const auto json = effective_config_json(*loaded.config);
  CHECK(json["routes"][0]["response_headers"]["cache_control"] == true);
  CHECK(json["routes"][0]["calls"][0]["response_headers"]["forward"].size() == 3);

  auto plain = load_config_text(head + calls.substr(0, calls.find("        response_headers")) +
                                    "      - {name: e, downstream: d, path: /e}\n",
                                "t.yaml");
  REQUIRE(plain.errors.empty());
  const auto& plain_route = std::get<aggregate_route>(plain.config->routes[0].kind);
  CHECK_FALSE(plain_route.passes_response_headers);
  CHECK(plain_route.calls[0].effective_response_headers.empty());

  for (const std::string bad :
       {"forward: [Content-Type]", "forward: [transfer-encoding]", "forward: [Vary]",
        "forward: [X-Request-Id]", "forward: [X-Degraded]", "forward: [Access-Control-Allow-Origin]",
        "forward: [Set-Cookie]", "forward: [Cache-Control]", "forward: [Connection]", "forward: [ETag]",
        "forward: ['bad name']", "set_cookie: ['a=b']", "cache_control: 3", "unknown: 1"}) {
    INFO(bad);
    const auto r = load_config_text(head + "    response_headers: {" + bad + "}\n" + calls, "t.yaml");
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].line == 5);
  }
  // cache_control is the route's: a call cannot ask for it alone.
  auto call_cache = load_config_text(
      head +
          "    calls:\n      - {name: c, downstream: d, path: /c, response_headers: {cache_control: true}}\n",
      "t.yaml");
  CHECK(call_cache.errors.size() == 1);
}

TEST_CASE("answer fields: an answer whose status a call passes keeps the fields pass_headers names",
          "[answer_fields][pass_status]") {
  response_header_policy two_xx;
  two_xx.forward = {"Content-Language"};
  passed_answer_policy pass;
  pass.statuses = {401, 429};
  pass.fields.forward = {"WWW-Authenticate", "Retry-After"};
  const std::string fields =
      "Content-Language: de\r\nWWW-Authenticate: Basic realm=\"x\"\r\nRetry-After: 3\r\nX-Other: 1\r\n";
  CHECK(kept(fields, two_xx, 401, &pass) == "WWW-Authenticate: Basic realm=\"x\"\r\nRetry-After: 3\r\n");
  CHECK(kept(fields, two_xx, 429, &pass) == "WWW-Authenticate: Basic realm=\"x\"\r\nRetry-After: 3\r\n");
  // Any other status keeps what the 2xx policy names (used for a 2xx only), with or without passing.
  CHECK(kept(fields, two_xx, 200, &pass) == "Content-Language: de\r\n");
  CHECK(kept(fields, two_xx, 403, &pass) == "Content-Language: de\r\n");
  CHECK(kept(fields, two_xx, 401) == "Content-Language: de\r\n");
}
