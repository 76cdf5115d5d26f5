#include "gateway/codec/sql_statement.hpp"

#include <catch2/catch.hpp>

using namespace gateway;

namespace {

sql_statement parse_ok(std::string_view query, placeholder_style style = placeholder_style::dollar) {
  std::string problem;
  auto s = parse_sql_statement(query, style, problem);
  INFO(problem);
  REQUIRE(s.has_value());
  return *s;
}

std::string problem_of(std::string_view query, placeholder_style style = placeholder_style::dollar) {
  std::string problem;
  CHECK_FALSE(parse_sql_statement(query, style, problem).has_value());
  return problem;
}

}  // namespace

TEST_CASE("named placeholders become positional, one position per name") {
  const auto s = parse_ok("SELECT a FROM t WHERE sku = :sku AND (r = :region OR :region IS NULL)");
  CHECK(s.text == "SELECT a FROM t WHERE sku = $1 AND (r = $2 OR $2 IS NULL)");
  CHECK(s.names == std::vector<std::string>{"sku", "region"});

  const auto q = parse_ok("SELECT a FROM t WHERE sku = :sku AND x = :x_2", placeholder_style::question);
  CHECK(q.text == "SELECT a FROM t WHERE sku = ?1 AND x = ?2");
  CHECK(q.names == std::vector<std::string>{"sku", "x_2"});
}

TEST_CASE("quoted text, comments, casts and dollar quotes are left alone") {
  const std::string query =
      "SELECT ':no', \":no\", E'\\':no', x::int, $$ :no $$, $t$ :no $t$ -- :no\n"
      "/* :no */ FROM t WHERE a = :yes";
  const auto s = parse_ok(query);
  CHECK(s.names == std::vector<std::string>{"yes"});
  CHECK(s.text == query.substr(0, query.size() - 4) + "$1");
  CHECK(parse_ok("SELECT 'it''s :no' WHERE a = :a").names == std::vector<std::string>{"a"});
}

TEST_CASE("malformed queries and hand-written positional parameters are refused") {
  CHECK(problem_of("SELECT 'open") == "unterminated string literal");
  CHECK(problem_of("SELECT \"open") == "unterminated quoted identifier");
  CHECK(problem_of("SELECT 1 /* open") == "unterminated comment");
  CHECK(problem_of("SELECT $$ open") == "unterminated dollar-quoted string");
  CHECK_THAT(problem_of("SELECT * FROM t WHERE a = $1"), Catch::Contains(":name"));
  CHECK_THAT(problem_of("SELECT * FROM t WHERE a = ?", placeholder_style::question),
             Catch::Contains(":name"));
  CHECK_THAT(problem_of("SELECT * FROM t WHERE a = @a", placeholder_style::question),
             Catch::Contains(":name"));
}
