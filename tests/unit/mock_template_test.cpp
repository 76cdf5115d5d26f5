// The mock's body templates: placeholders in string values filled from each request, bare numbers with
// '#', and what a body must be to be set.

#include "loadtest/mock/body_template.hpp"
#include "loadtest/mock/control.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <array>

using namespace mock;

namespace {

body_template parsed(std::string json) {
  std::string error;
  auto t = body_template::parse(json, error);
  INFO(json << ": " << error);
  REQUIRE(t.has_value());
  return std::move(*t);
}

std::string parse_error(std::string json) {
  std::string error;
  CHECK_FALSE(body_template::parse(std::move(json), error).has_value());
  return error;
}

std::string expand(const body_template& t, std::string_view path, std::string_view query = {},
                   std::span<const std::string_view> headers = {}) {
  std::string out;
  t.expand(out, {path, query, headers});
  INFO(out);
  CHECK(nlohmann::json::accept(out));
  return out;
}

}  // namespace

TEST_CASE("mock template: a body without placeholders is sent as written", "[mock]") {
  for (std::string json : {R"({"a": [1, 2.50], "b": "x"})", R"({"css": "a {color: red}", "{path}": 1})",
                           R"({"x": "{pathx} {seg} {#} {query} {#abc} {{} }{"})", R"("plain")", "[]"}) {
    const auto t = parsed(json);
    INFO(json);
    CHECK(t.verbatim());
    CHECK(t.text() == json);
  }
}

TEST_CASE("mock template: path, segments, query and headers", "[mock]") {
  const auto t =
      parsed(R"({"id": "{seg.1}", "whole": "{path}", "kind": "{seg.0}", "none": "{seg.9}", )"
             R"("q": "p={query.product}&r={query.region}", "h": ["{header.X-Tenant}", "{header.x-tenant}"], )"
             R"("{seg.1}": "keys are kept", "n": 5, "nested": {"deep": "<{seg.2}>"}})");
  CHECK_FALSE(t.verbatim());
  REQUIRE(t.header_names() == std::vector<std::string>{"x-tenant"});
  const std::array<std::string_view, 1> tenant{"acme"};
  CHECK(expand(t, "seller/17", "product=9&region=eu%2Dwest", tenant) ==
        R"({"id": "17", "whole": "seller/17", "kind": "seller", "none": "", )"
        R"("q": "p=9&r=eu-west", "h": ["acme", "acme"], "{seg.1}": "keys are kept", "n": 5, )"
        R"("nested": {"deep": "<>"}})");
  // A missing query parameter or header field is empty; a bad percent escape stays as written.
  CHECK(expand(t, "seller/a/b", "region=%zz") ==
        R"({"id": "a", "whole": "seller/a/b", "kind": "seller", "none": "", )"
        R"("q": "p=&r=%zz", "h": ["", ""], "{seg.1}": "keys are kept", "n": 5, "nested": {"deep": "<b>"}})");
}

TEST_CASE("mock template: replacements are escaped", "[mock]") {
  const auto t = parsed(R"({"v": "[{query.v}]"})");
  const auto out = expand(t, "p", "v=a%22b%5Cc%0Ad%01e%2Fx");
  CHECK(out == R"({"v": "[a\"b\\c\nd\u0001e/x]"})");
  CHECK(nlohmann::json::parse(out)["v"] ==
        "[a\"b\\c\nd\x01"
        "e/x]");
  // Invalid UTF-8 becomes U+FFFD rather than breaking the JSON.
  CHECK(nlohmann::json::parse(expand(t, "p", "v=%FF"))["v"] == "[\xEF\xBF\xBD]");
}

TEST_CASE("mock template: '#' writes a bare number when it is one", "[mock]") {
  const auto t = parsed(R"({"id": "{#seg.1}", "count": "{#query.n}", "tag": "{seg.1}"})");
  CHECK(expand(t, "seller/17", "n=-2.5e3") == R"({"id": 17, "count": -2.5e3, "tag": "17"})");
  CHECK(expand(t, "seller/abc", "n=") == R"({"id": "abc", "count": "", "tag": "abc"})");
  CHECK(expand(t, "seller/017", "n=1.") == R"({"id": "017", "count": "1.", "tag": "017"})");
  CHECK(expand(t, "seller/0", "n=%22") == R"({"id": 0, "count": "\"", "tag": "0"})");
  const auto top = parsed(R"(["{#path}", "{#seg.0}"])");
  CHECK(expand(top, "42") == "[42, 42]");

  for (std::string_view number : {"0", "-0", "17", "1.5", "1e9", "1E+2", "-3.25e-10"}) {
    INFO(number);
    CHECK(is_json_number(number));
  }
  for (std::string_view text : {"", "-", "01", "1.", ".5", "1e", "+1", "0x10", "1 ", "NaN", "Infinity"}) {
    INFO(text);
    CHECK_FALSE(is_json_number(text));
  }
}

TEST_CASE("mock template: bodies that cannot be set", "[mock]") {
  CHECK(parse_error("{not json") == "is not JSON");
  CHECK(parse_error(R"({"a": "{seg.x}"})") == "has a bad placeholder '{seg.x}'");
  CHECK(parse_error(R"({"a": "{seg.}"})") == "has a bad placeholder '{seg.}'");
  CHECK(parse_error(R"({"a": "{seg.128}"})") == "has a bad placeholder '{seg.128}'");
  CHECK(parse_error(R"({"a": "{query.}"})") == "has a bad placeholder '{query.}'");
  CHECK(parse_error(R"({"a": "{query.a b}"})") == "has a bad placeholder '{query.a b}'");
  CHECK(parse_error(R"({"a": "{#header.}"})") == "has a bad placeholder '{#header.}'");
  CHECK(parse_error(R"({"a": "id-{#seg.1}"})").starts_with("has '{#seg.1}' in a longer string"));

  // /__control refuses them with the reason.
  std::string error;
  CHECK_FALSE(
      parse_control("path=seller/*&body=%7B%22a%22%3A%22%7Bseg.x%7D%22%7D", control_kind::control, error));
  CHECK(error == "body has a bad placeholder '{seg.x}'");
  CHECK_FALSE(parse_control("path=seller/*&body=%7Bnot", control_kind::control, error));
  CHECK(error == "body is not JSON");
}
