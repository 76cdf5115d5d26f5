// Route parameter patterns: the byte-table form must answer exactly as RE2 does, every other expression
// goes to RE2, and long values against nested or backtracking patterns return on a connection's stack.

#include "gateway/config/param_pattern.hpp"

#include "gateway/config/config.hpp"

#include <catch2/catch.hpp>

#include <pthread.h>
#include <re2/re2.h>

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

std::unique_ptr<const param_pattern> compiled(
    const std::string& pattern, std::size_t max_value_bytes = param_pattern::default_max_value_bytes) {
  std::string error;
  auto p = param_pattern::compile(pattern, error, max_value_bytes);
  INFO(pattern << ": " << error);
  REQUIRE(p);
  return p;
}

}  // namespace

TEST_CASE("param pattern: the bracket-class form agrees with RE2", "[param_pattern]") {
  const std::vector<std::string> patterns = {
      "^[A-Za-z0-9_-]{1,64}$", "[0-9]+", "^[a-z]*$",    "[-a-f]{2}", "[A-Z0-9.~]{0,3}",
      "^[0-9]{3,}$",           "[xyz]",  "[a-c-]{1,2}", "[ :/]+",    "[:alpha:]{1,3}",
  };
  auto values = sample_values();
  values.push_back(std::string(param_pattern::default_max_value_bytes, '7'));
  for (const auto& pattern : patterns) {
    INFO(pattern);
    REQUIRE(char_class_pattern::compile(pattern).has_value());
    const auto fast = compiled(pattern);
    const RE2 reference(pattern);  // UTF-8, as the gateway reads patterns and values
    REQUIRE(reference.ok());
    for (const auto& value : values) {
      INFO("value of " << value.size() << " bytes: " << value);
      CHECK(fast->matches(value) == RE2::FullMatch(value, reference));
    }
  }
}

TEST_CASE("param pattern: other expressions go to RE2, invalid ones are refused", "[param_pattern]") {
  for (const std::string pattern : {"^A[0-9]+$", "[^a-z]+", "[\\d]+", "\\w{1,4}", "(a|b)+", "[a-z]{2}[0-9]",
                                    "[z-a]", "[a-z]{5,2}", "[[]", "^[a-z]+$|x"}) {
    INFO(pattern);
    CHECK(!char_class_pattern::compile(pattern).has_value());
  }
  const auto sku = compiled("^A[0-9]+$");
  CHECK(sku->matches("A123"));
  CHECK(!sku->matches("B123"));
  CHECK(!sku->matches("A123\n"));
  const auto word = compiled("^\\w+(-\\w+)*$");
  CHECK(word->matches("red-green_blue"));
  CHECK(!word->matches("red--green"));

  // Bad syntax, and what ECMAScript has but a linear-time matcher cannot do: backreferences, lookaround;
  // and counts above RE2's 1000.
  for (const std::string pattern : {"[a-", "(a", "(a)\\1", "(?=a)a", "(?!a)b", "a{1,1001}"}) {
    INFO(pattern);
    std::string error;
    CHECK(param_pattern::compile(pattern, error) == nullptr);
    CHECK_FALSE(error.empty());
  }
}

TEST_CASE("param pattern: values are UTF-8 characters, invalid UTF-8 matches no class", "[param_pattern]") {
  const auto three = compiled("^.{1,3}$");
  CHECK(three->matches("\xc3\xa9\xc3\xa9\xc3\xa9"));  // three characters in six bytes
  CHECK(!three->matches("\xff"));
  CHECK(
      !compiled("^[^/]+$")->matches("a\xff"
                                    "b"));
  CHECK(compiled("^caf\xc3\xa9$")->matches("caf\xc3\xa9"));
}

TEST_CASE("param pattern: a value longer than the cap is rejected without matching", "[param_pattern]") {
  for (const std::string pattern : {"^[a-z]+$", "^\\w+$"}) {
    INFO(pattern);
    const auto p = compiled(pattern);
    CHECK(p->matches(std::string(param_pattern::default_max_value_bytes, 'a')));
    CHECK(!p->matches(std::string(param_pattern::default_max_value_bytes + 1, 'a')));
  }
}

namespace {

// Runs `fn` on a thread whose stack is a connection coroutine's (64 KiB, more under sanitizers): matching
// must fit there, whatever the value's length.
template <class Fn>
void on_connection_sized_stack(Fn fn) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  REQUIRE(pthread_attr_setstacksize(&attr, server_settings{}.stack_bytes()) == 0);
  pthread_t thread;
  const auto run = [](void* arg) -> void* {
    (*static_cast<Fn*>(arg))();
    return nullptr;
  };
  REQUIRE(pthread_create(&thread, &attr, run, &fn) == 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

struct long_value_case {
  std::string pattern;
  std::string value;
  bool expected;
};

std::vector<long_value_case> long_value_cases() {
  constexpr std::size_t n = 64 * 1024;
  std::string words;
  while (words.size() < n) words += "abc-";
  words.resize(n);
  if (words.back() == '-') words.back() = 'x';
  return {
      {"^[a-z]+(-[a-z]+)*$", words, true},      {"^[a-z]+(-[a-z]+)*$", words + "-", false},
      {"^\\w+$", std::string(n, 'a'), true},    {"^\\w+$", std::string(n - 1, 'a') + "!", false},
      {"^(a+)+$", std::string(n, 'a'), true},   {"^(a+)+$", std::string(n - 1, 'a') + "b", false},
      {"(x+x+)+y", std::string(n, 'x'), false}, {"(x+x+)+y", std::string(n - 1, 'x') + "y", true},
  };
}

}  // namespace

TEST_CASE("param pattern: 64 KiB values against nested and backtracking patterns return the right answer",
          "[param_pattern]") {
  for (const auto& c : long_value_cases()) {
    INFO(c.pattern << " against " << c.value.size() << " bytes ending in " << c.value.back());
    const auto pattern = compiled(c.pattern, c.value.size());
    bool matched = !c.expected;
    on_connection_sized_stack([&] { matched = pattern->matches(c.value); });
    CHECK(matched == c.expected);
  }
}
