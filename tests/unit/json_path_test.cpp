// Values found in a JSON answer by a dotted path, their text, the elements of an array; and what becomes of
// such a value in a downstream path or a JSON body: never more than the one value it was.

#include "gateway/codec/json_path.hpp"
#include "gateway/codec/body_template.hpp"
#include "gateway/codec/http_text.hpp"
#include "gateway/codec/json_object.hpp"
#include "gateway/codec/path_template.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace gateway;

namespace {

json_path path(std::string_view text) {
  std::string error;
  auto p = json_path::parse(text, error);
  INFO(error);
  REQUIRE(p);
  return *p;
}

// The value at `at` in `doc`, which must be a valid JSON object as every answer is.
json_value_view find(std::string_view doc, std::string_view at) {
  json_object_text validated;
  REQUIRE(parse_json_object(std::string(doc), validated));
  return find_json(doc, path(at));
}

std::optional<std::string> text_at(std::string_view doc, std::string_view at) {
  return scalar_text(find(doc, at));
}

constexpr std::string_view order = R"({"id": "o-1",
  "seller": {"id": 42, "name": "Ada", "address": {"city": "Z\u00fcrich"}},
  "lines": [{"sku": "A1", "qty": 2}, {"sku": "B2", "qty": 1}, {"sku": "C3", "qty": 5}],
  "empty": [], "nothing": null, "flags": {"0": "zero", "10": "ten"}})";

// Values an answer could hold to break out of their place in a request.
std::vector<std::string> hostile_values() {
  using namespace std::string_literals;  // "a\0b"s keeps its NUL
  // Path and query syntax, dot segments, an encoded slash; JSON syntax and a member injection; line breaks,
  // NUL and other controls; unicode.
  std::vector<std::string> values = {"", ".", "..", "../admin", "/", "?", "#", "%2F", "a/b?c=d#e", " + "};
  for (const auto v : {"\"", "\\", "\\u0000", "{v}", "\"}, \"admin\": true, \"x\": \""}) values.push_back(v);
  for (const auto& v : {"\r\n"s, "a\r\nX-Evil: 1"s, "a\0b"s, "\x7f\x01\x1f"s}) values.push_back(v);
  values.push_back("\xC3\xA9\xF0\x9F\x98\x80");  // é😀
  return values;
}

}  // namespace

TEST_CASE("a dotted path leads through nested objects and array elements to a value") {
  CHECK(text_at(order, "id") == "o-1");
  CHECK(text_at(order, "seller.id") == "42");
  CHECK(text_at(order, "seller.address.city") == "Z\xC3\xBCrich");
  CHECK(text_at(order, "lines.0.sku") == "A1");
  CHECK(text_at(order, "lines.2.qty") == "5");
  CHECK(find(order, "lines.1").text == R"({"sku": "B2", "qty": 1})");
  CHECK(find(order, "lines").kind == json_kind::array);
  CHECK(find(order, "seller").kind == json_kind::object);
  // No steps: the answer itself, without the whitespace around it.
  const auto whole = find(" \n{\"a\": 1}\t ", "");
  CHECK(whole.kind == json_kind::object);
  CHECK(whole.text == "{\"a\": 1}");
}

TEST_CASE("a step of digits names a member of an object and indexes an array") {
  CHECK(text_at(order, "flags.0") == "zero");
  CHECK(text_at(order, "flags.10") == "ten");
  CHECK(text_at(R"({"a": {"01": "x"}})", "a.01") == "x");
  CHECK(text_at(R"({"a": [[1, 2], [3, 4]]})", "a.1.0") == "3");
}

TEST_CASE("a value that is not there is missing") {
  for (const char* at : {"lines.3", "lines.99999999999999999999999", "lines.01", "lines.-1", "lines.sku",
                         "empty.0", "nothing.x", "id.0", "seller.id.x", "flags.1", "seller.ID", "absent"}) {
    INFO(at);
    CHECK(find(order, at).kind == json_kind::missing);
    CHECK_FALSE(text_at(order, at));
  }
}

TEST_CASE("a key given twice counts by its last occurrence, also when written differently") {
  CHECK(text_at(R"({"a": 1, "b": 2, "a": 3})", "a") == "3");
  CHECK(text_at(R"({"a": {"x": 1}, "a": {"y": 2}})", "a.y") == "2");
  CHECK_FALSE(text_at(R"({"a": {"x": 1}, "a": {"y": 2}})", "a.x"));
  CHECK(text_at(R"({"A": 1, "\u0041": 2})", "A") == "2");
  CHECK(text_at(R"({"\u0041": 1, "A": 2})", "A") == "2");
}

TEST_CASE("keys are compared with their escapes decoded") {
  CHECK(text_at(R"({"\u0061\u0062": "ab"})", "ab") == "ab");
  CHECK(text_at(R"({"a\/b": "slash"})", "a/b") == "slash");
  CHECK(text_at(R"({"\u0063a\u0046\t": 1, "caF": 2})", "caF") == "2");
  CHECK(text_at(R"({"\u007e\u0021": "~!"})", "~!") == "~!");
  CHECK_FALSE(text_at(R"({"\u0041": 1})", "u0041"));  // as written, the key is not its name
}

TEST_CASE("a string's text is decoded: escapes, unicode, surrogate pairs") {
  CHECK(text_at(R"({"s": "q\"b\\s\/n\nr\rt\tb\bf\f"})", "s") == "q\"b\\s/n\nr\rt\tb\bf\f");
  CHECK(text_at(R"({"s": "\u0041\u00e9\u20ac\ud83d\ude00"})", "s") ==
        "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  CHECK(text_at("{\"s\": \"\xC3\xA9\xF0\x9F\x98\x80\"}", "s") == "\xC3\xA9\xF0\x9F\x98\x80");
  CHECK(text_at(R"({"s": "a\u0000b"})", "s") == std::string("a\0b", 3));
  CHECK(text_at(R"({"s": ""})", "s") == "");
  // A lone surrogate never passes validation; a view made by hand still decodes it, as U+FFFD.
  CHECK(scalar_text({json_kind::string, R"("x\ud800y")"}) == "x\xEF\xBF\xBDy");
  CHECK(scalar_text({json_kind::string, R"("\udc00")"}) == "\xEF\xBF\xBD");
  CHECK(scalar_text({json_kind::string, R"("\ud83d\u0041")"}) ==
        "\xEF\xBF\xBD"
        "A");
}

TEST_CASE("numbers are kept as written, booleans as true and false") {
  const std::string_view doc =
      R"({"z": -0, "e": 1e5, "f": 1.50, "n": -12.5E+3, "big": 123456789012345678901234,
                                   "t": true, "no": false})";
  CHECK(text_at(doc, "z") == "-0");
  CHECK(text_at(doc, "e") == "1e5");
  CHECK(text_at(doc, "f") == "1.50");
  CHECK(text_at(doc, "n") == "-12.5E+3");
  CHECK(text_at(doc, "big") == "123456789012345678901234");
  CHECK(text_at(doc, "t") == "true");
  CHECK(text_at(doc, "no") == "false");
  CHECK(find(doc, "t").kind == json_kind::boolean);
  CHECK(find(doc, "f").kind == json_kind::number);
}

TEST_CASE("null, objects, arrays and missing values have no scalar text") {
  CHECK(find(order, "nothing").kind == json_kind::null);
  CHECK_FALSE(text_at(order, "nothing"));
  CHECK_FALSE(text_at(order, "seller"));
  CHECK_FALSE(text_at(order, "lines"));
  CHECK_FALSE(text_at(order, "absent"));
  CHECK_FALSE(scalar_text({}));
}

TEST_CASE("whitespace around every token is passed over") {
  const std::string_view doc = " \r\n\t{ \"a\" \n:\t[ 1 ,\r\n{ \"b\" : \"x\" } , true ] , \"c\" : null } \n";
  CHECK(text_at(doc, "a.1.b") == "x");
  CHECK(text_at(doc, "a.2") == "true");
  CHECK(text_at(doc, "a.0") == "1");
  CHECK(find(doc, "a.1").text == R"({ "b" : "x" })");
  CHECK(find(doc, "c").kind == json_kind::null);
}

TEST_CASE("a path is refused for empty steps, characters outside printable ASCII, braces, quotes and size") {
  std::string error;
  CHECK(json_path::parse("", error)->steps.empty());
  CHECK(json_path::parse("a.0.b-c_d~e:f", error)->steps == std::vector<std::string>{"a", "0", "b-c_d~e:f"});
  for (const std::string& bad :
       std::vector<std::string>{".", "a.", ".a", "a..b", "a b", "a\tb", "{a}", "a}", "a\"b", "a\\b",
                                "\xC3\xA9", std::string("a\0b", 3), "a\x7f"}) {
    INFO(bad);
    error.clear();
    CHECK_FALSE(json_path::parse(bad, error));
    CHECK_FALSE(error.empty());
  }
  std::string sixteen = "a";
  for (int i = 1; i < 16; ++i) sixteen += ".a";
  CHECK(json_path::parse(sixteen, error)->steps.size() == 16);
  CHECK_FALSE(json_path::parse(sixteen + ".a", error));
  CHECK(json_path::parse(std::string(128, 'k'), error));
  CHECK_FALSE(json_path::parse(std::string(129, 'k'), error));
}

TEST_CASE("for_each_element visits an array's elements in order, at most max of them, and counts all") {
  const auto elements = [](std::string_view doc, std::string_view at, std::size_t max, std::size_t& count) {
    std::vector<std::string> seen;
    count = for_each_element(find(doc, at), max, [&](json_value_view e) { seen.emplace_back(e.text); });
    return seen;
  };
  std::size_t count = 0;
  CHECK(elements(order, "empty", 10, count).empty());
  CHECK(count == 0);
  CHECK(elements(R"({"a": [ "x" ]})", "a", 10, count) == std::vector<std::string>{"\"x\""});
  CHECK(count == 1);
  const std::string_view many = R"({"a": [1, "two", [3, [4]], {"five": 5}, null, true, -7.5e1]})";
  CHECK(elements(many, "a", 100, count) ==
        std::vector<std::string>{"1", "\"two\"", "[3, [4]]", R"({"five": 5})", "null", "true", "-7.5e1"});
  CHECK(count == 7);
  CHECK(elements(many, "a", 2, count) == std::vector<std::string>{"1", "\"two\""});
  CHECK(count == 7);
  CHECK(elements(many, "a", 0, count).empty());
  CHECK(count == 7);
  CHECK(elements(order, "lines.0.sku", 10, count).empty());  // no array
  CHECK(count == 0);
  CHECK(elements(order, "absent", 10, count).empty());
  CHECK(count == 0);
  std::size_t skus = 0;
  for_each_element(find(order, "lines"), 10, [&](json_value_view line) {
    skus += scalar_text(find_json(line.text, path("sku"))).has_value();
  });
  CHECK(skus == 3);
}

TEST_CASE("a text that breaks the contract ends the scan with a missing value, never a read beyond it") {
  // Every cut of a valid document: the scan stays within the cut (ASan builds check it) and finds nothing
  // it would have to read past the cut for.
  const std::string doc(order);
  for (std::size_t n = 0; n < doc.size(); ++n) {
    const std::string cut = doc.substr(0, n);  // its own allocation, so a read past it is out of bounds
    for (const char* at : {"lines.2.qty", "flags.10", "seller.address.city", "nothing", ""}) {
      const auto v = find_json(cut, path(at));
      if (v.kind != json_kind::missing) {
        CHECK(v.text.data() >= cut.data());
        CHECK(v.text.data() + v.text.size() <= cut.data() + cut.size());
      }
    }
    for_each_element({json_kind::array, cut}, 100, [](json_value_view) {});
  }
  for (const char* bad : {"{\"a\" 1}", "{\"a\":}", "{\"a\":1 \"b\":2}", "{\"a\":x}", "[1,", "{\"a\":\"\\"}) {
    INFO(bad);
    CHECK(find_json(bad, path("a")).kind == json_kind::missing);
  }
}

// What a value taken from an answer can do once it is put into a downstream request: nothing but be itself.
TEST_CASE("a value in a path template adds no segment, query or fragment and decodes back to itself") {
  std::string error;
  const auto t = path_template::parse("/a/{v}?q={v}", error);
  REQUIRE(t);
  for (const auto& value : hostile_values()) {
    INFO(nlohmann::json(value).dump());
    std::string out;
    t->expand(out, [&](const std::string&) -> std::string_view { return value; });
    CHECK(std::count(out.begin(), out.end(), '/') == 2);
    CHECK(std::count(out.begin(), out.end(), '?') == 1);
    CHECK(out.find('#') == std::string::npos);
    REQUIRE(out.starts_with("/a/"));
    const auto query = out.find("?q=");
    REQUIRE(query != std::string::npos);
    std::string segment, query_value;
    REQUIRE(percent_decode(std::string_view(out).substr(3, query - 3), segment, false));
    REQUIRE(percent_decode(std::string_view(out).substr(query + 3), query_value, false));
    CHECK(segment == value);
    CHECK(query_value == value);
  }
}

TEST_CASE("a value in a body template stays one string value and comes back exactly") {
  std::string error;
  const auto t = body_template::parse(R"({"k":"{v}","n":1})", error);
  REQUIRE(t);
  for (const auto& value : hostile_values()) {
    INFO(nlohmann::json(value).dump());
    std::string out;
    t->expand(out, [&](const std::string&) -> std::string_view { return value; });
    const auto body = nlohmann::json::parse(out);
    REQUIRE(body.is_object());
    CHECK(body.size() == 2);
    CHECK(body.contains("k"));
    CHECK(body.value("n", 0) == 1);
    CHECK(body["k"] == value);
    // The gateway's own reading of the body agrees.
    json_object_text validated;
    REQUIRE(parse_json_object(out, validated));
    CHECK(text_at(out, "k") == value);
  }
}

TEST_CASE("a string taken from an answer goes into a path and a body as the same text") {
  const std::string_view answer =
      R"({"seller": {"id": "s/1?x#y\"}, \"admin\": true, \"z\": \"\u00e9\ud83d\ude00"}})";
  const auto value = text_at(answer, "seller.id");
  REQUIRE(value);
  CHECK(*value == "s/1?x#y\"}, \"admin\": true, \"z\": \"\xC3\xA9\xF0\x9F\x98\x80");
  std::string error, target, body;
  path_template::parse("/sellers/{id}", error)->expand(target, [&](const std::string&) -> std::string_view {
    return *value;
  });
  CHECK(target ==
        "/sellers/s%2F1%3Fx%23y%22%7D%2C%20%22admin%22%3A%20true%2C%20%22z%22%3A%20%22%C3%A9%F0%9F%98%80");
  body_template::parse(R"({"seller":"{id}"})", error)
      ->expand(body, [&](const std::string&) -> std::string_view { return *value; });
  CHECK(nlohmann::json::parse(body) == nlohmann::json{{"seller", *value}});
}
