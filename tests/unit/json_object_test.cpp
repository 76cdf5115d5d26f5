#include "gateway/codec/json_object.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace gateway;

namespace {

bool valid(const std::string& text) {
  json_object_text out;
  return parse_json_object(text, out);
}

}  // namespace

TEST_CASE("a JSON object's top-level members are located, values kept as written") {
  json_object_text o;
  REQUIRE(parse_json_object(R"( {"a": 1, "b\n":[1, {"c":null}] ,"d":"x\"y", "e": -0.5e+3, "f": true} )", o));
  REQUIRE(o.members.size() == 5);
  CHECK(o.key(o.members[0]) == "a");
  CHECK(o.value(o.members[0]) == "1");
  CHECK(o.key(o.members[1]) == "b\\n");
  CHECK(o.members[1].key_escaped);
  CHECK(o.decoded_key(o.members[1]) == "b\n");
  CHECK(o.value(o.members[1]) == R"([1, {"c":null}])");
  CHECK(o.value(o.members[2]) == R"("x\"y")");
  CHECK(o.value(o.members[3]) == "-0.5e+3");
  CHECK(o.value(o.members[4]) == "true");
  CHECK(valid("{}"));
}

TEST_CASE("anything but one well-formed JSON object is refused") {
  for (const char* bad : {"",
                          "[]",
                          "1",
                          "\"s\"",
                          "null",
                          "{",
                          "{\"a\"}",
                          "{\"a\":}",
                          "{\"a\":1,}",
                          "{\"a\":1}{}",
                          "{a:1}",
                          "{\"a\":01}",
                          "{\"a\":1.}",
                          "{\"a\":.5}",
                          "{\"a\":-}",
                          "{\"a\":1e}",
                          "{\"a\":tru}",
                          "{\"a\":\"\\x\"}",
                          "{\"a\":\"\\u12\"}",
                          "{\"a\":\"\\ud800\"}",
                          "{\"a\":\"\\udc00\"}",
                          "{\"a\":[1,]}",
                          "{\"a\":'x'}",
                          "{\"a\":NaN}"}) {
    INFO(bad);
    CHECK_FALSE(valid(bad));
  }
  CHECK_FALSE(valid(std::string("{\"a\":\"") + '\x01' + "\"}"));  // raw control character
  CHECK_FALSE(valid("{\"a\":\"\xC3\"}"));                         // truncated UTF-8
  CHECK_FALSE(valid("{\"a\":\"\xC0\xAF\"}"));                     // overlong
  CHECK_FALSE(valid("{\"a\":\"\xED\xA0\x80\"}"));                 // encoded surrogate
  CHECK_FALSE(valid("{\"a\":\"\xFF\"}"));                         // not UTF-8 at all
  CHECK(valid("{\"a\":\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\",\"s\":\"\\ud83d\\ude00\"}"));
}

TEST_CASE("nesting is bounded") {
  std::string deep = "{\"a\":";
  for (int i = 0; i < 62; ++i) deep += "[";
  std::string close(62, ']');
  CHECK(valid(deep + "1" + close + "}"));
  CHECK_FALSE(valid(deep + "[[1]]" + close + "}"));
  std::string very_deep = "{\"a\":" + std::string(100000, '[');  // no stack overflow, just a refusal
  CHECK_FALSE(valid(very_deep));
}

TEST_CASE("an in-memory object converts to the same text form") {
  const auto o = json_object_from(nlohmann::json{{"priceCent", 12}, {"name", "é"}});
  REQUIRE(o.members.size() == 2);
  CHECK(nlohmann::json::parse(o.text) == nlohmann::json{{"priceCent", 12}, {"name", "é"}});
}

TEST_CASE("the scanner agrees with a full JSON parser on mutated inputs") {
  // Byte-level mutations of realistic bodies: whatever the scanner accepts must be an object a full parser
  // accepts, and the other way round; and the members it finds are the parser's.
  const std::vector<std::string> seeds = {
      R"({"sku":"A1","priceCent":1299,"stock":7,"tags":["x","y"],"meta":{"a":null,"b":true,"c":-1.5e-3}})",
      R"({"k\"ey":"\u00e9\ud83d\ude00","n":[0,1,2,{"d":[]}],"e":""})",
  };
  const std::string alphabet = "{}[]\":,\\ueE.-+0159tfnarsl \x01\x7f\xc3\xa9\xff";
  std::uint64_t state = 0x9e3779b97f4a7c15ULL;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  int accepted = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string text = seeds[next() % seeds.size()];
    const int edits = 1 + static_cast<int>(next() % 3);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const auto at = next() % text.size();
      switch (next() % 3) {
        case 0:
          text[at] = alphabet[next() % alphabet.size()];
          break;
        case 1:
          text.erase(at, 1);
          break;
        default:
          text.insert(at, 1, alphabet[next() % alphabet.size()]);
      }
    }
    json_object_text scanned;
    const bool ours = parse_json_object(text, scanned);
    const auto parsed = nlohmann::json::parse(text, nullptr, false);
    const bool theirs = !parsed.is_discarded() && parsed.is_object();
    INFO(text);
    REQUIRE(ours == theirs);
    if (!ours) continue;
    ++accepted;
    for (const auto& member : scanned.members) CHECK(parsed.contains(scanned.decoded_key(member)));
    CHECK(parsed.size() <= scanned.members.size());
  }
  CHECK(accepted > 100);  // the mutations do not only produce garbage
}
