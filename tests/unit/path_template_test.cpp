#include "gateway/codec/path_template.hpp"

#include <catch2/catch.hpp>

#include <map>

using namespace gateway;

namespace {

std::string expand(const std::string& pattern, const std::map<std::string, std::string>& values) {
  std::string error;
  auto t = path_template::parse(pattern, error);
  REQUIRE(t);
  std::string out;
  t->expand(out, [&](const std::string& name) -> std::string_view { return values.at(name); });
  return out;
}

}  // namespace

TEST_CASE("templates substitute parameters") {
  CHECK(expand("/inventory?sku={sku}", {{"sku", "A1"}}) == "/inventory?sku=A1");
  CHECK(expand("/items/{id}/price", {{"id", "x_9-~"}}) == "/items/x_9-~/price");
  CHECK(expand("/static", {}) == "/static");
}

TEST_CASE("hostile values cannot add a segment, a query, a fragment or a header line") {
  CHECK(expand("/i?sku={sku}", {{"sku", "../admin"}}) == "/i?sku=%2E%2E%2Fadmin");
  CHECK(expand("/i/{sku}", {{"sku", ".."}}) == "/i/%2E%2E");
  CHECK(expand("/i?sku={sku}", {{"sku", "a\r\nX-Evil: 1"}}) == "/i?sku=a%0D%0AX-Evil%3A%201");
  CHECK(expand("/i?sku={sku}", {{"sku", "%0d%0a"}}) == "/i?sku=%250d%250a");
  CHECK(expand("/i?sku={sku}", {{"sku", "a?x=1&y=2"}}) == "/i?sku=a%3Fx%3D1%26y%3D2");
  CHECK(expand("/i?sku={sku}", {{"sku", "a#frag"}}) == "/i?sku=a%23frag");
  CHECK(expand("/i?sku={sku}", {{"sku", "\xC3\xA9"}}) == "/i?sku=%C3%A9");
  CHECK(expand("/i?sku={sku}", {{"sku", std::string("a\0b", 3)}}) == "/i?sku=a%00b");
}

TEST_CASE("malformed templates are rejected") {
  for (const char* bad : {"no-slash", "/a/{", "/a/}", "/a/{}", "/a/{{x}}", "/a b", "/a\r\n"}) {
    std::string error;
    INFO(bad);
    CHECK_FALSE(path_template::parse(bad, error));
    CHECK_FALSE(error.empty());
  }
}

TEST_CASE("templates list the parameters they name") {
  std::string error;
  auto t = path_template::parse("/a/{x}/b?c={y}&d={x}", error);
  REQUIRE(t);
  CHECK(t->param_names() == std::vector<std::string>{"x", "y", "x"});
}
