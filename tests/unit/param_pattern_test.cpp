// Route parameter patterns: the byte-table form must answer exactly as std::regex does, and every other
// expression must still work (through std::regex).

#include "gateway/config/param_pattern.hpp"

#include <catch2/catch.hpp>

#include <regex>
#include <string>
#include <vector>

using namespace gateway;

namespace {

std::vector<std::string> sample_values() {
  std::vector<std::string> values = {"",
                                     "A",
                                     "a1",
                                     "A1_-",
                                     "-",
                                     "_",
                                     "A1 ",
                                     " A1",
                                     "A1\n",
                                     "é",
                                     "A.1",
                                     "A/1",
                                     "0123456789",
                                     std::string(64, 'x'),
                                     std::string(65, 'x'),
                                     std::string("A\0B", 3),
                                     "[",
                                     "]",
                                     "^",
                                     "$",
                                     "\\",
                                     "Z",
                                     "z",
                                     "09",
                                     "::"};
  for (int c = 0; c < 256; ++c) values.emplace_back(1, static_cast<char>(c));
  return values;
}

}  // namespace

TEST_CASE("param pattern: the bracket-class form agrees with std::regex") {
  const std::vector<std::string> patterns = {
      "^[A-Za-z0-9_-]{1,64}$", "[0-9]+", "^[a-z]*$",    "[-a-f]{2}", "[A-Z0-9.~]{0,3}",
      "^[0-9]{3,}$",           "[xyz]",  "[a-c-]{1,2}", "[ :/]+",
  };
  const auto values = sample_values();
  for (const auto& pattern : patterns) {
    INFO(pattern);
    REQUIRE(char_class_pattern::compile(pattern).has_value());
    const param_pattern fast(pattern);
    const std::regex reference(pattern, std::regex::ECMAScript);
    for (const auto& value : values) {
      INFO("value of " << value.size() << " bytes: " << value);
      CHECK(fast.matches(value) == std::regex_match(value, reference));
    }
  }
}

TEST_CASE("param pattern: other expressions go to std::regex, invalid ones are refused") {
  for (const std::string pattern : {"^A[0-9]+$", "[^a-z]+", "[\\d]+", "\\w{1,4}", "(a|b)+", "[a-z]{2}[0-9]",
                                    "[z-a]", "[a-z]{5,2}", "[[]", "^[a-z]+$|x"}) {
    INFO(pattern);
    CHECK(!char_class_pattern::compile(pattern).has_value());
  }
  const param_pattern sku("^A[0-9]+$");
  CHECK(sku.matches("A123"));
  CHECK(!sku.matches("B123"));
  CHECK_THROWS_AS(param_pattern("[a-"), std::regex_error);
  CHECK_THROWS_AS(param_pattern("(a"), std::regex_error);
}
