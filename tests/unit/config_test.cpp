#include "gateway/config/config_loader.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace gateway;

namespace {

const std::string good = R"(server:
  listen: 127.0.0.1:0
  threads: 2
downstreams:
  inventory:
    url: http://127.0.0.1:9001/base/
    connect_timeout: 50ms
    max_connections: 16
routes:
  - path: /api/offer/aggregate
    deadline: 300ms
    params:
      sku: {required: true, pattern: '^[A-Z0-9]+$'}
    response: object
    calls:
      - name: inventory
        downstream: inventory
        path: /inventory?sku={sku}
        timeout: 100ms
        required: true
        fields: [priceCent]
        fallback: {priceCent: -1, label: "x", ok: false}
)";

// The single error produced by replacing `from` with `to` in the good config.
config_error only_error(const std::string& from, const std::string& to) {
  std::string text = good;
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  const auto r = load_config_text(text, "t.yaml");
  CHECK_FALSE(r.config.has_value());
  REQUIRE(r.errors.size() == 1);
  return r.errors[0];
}

}  // namespace

TEST_CASE("a good file loads with every value") {
  const auto r = load_config_text(good, "t.yaml");
  REQUIRE(r.errors.empty());
  const auto& c = *r.config;
  CHECK(c.server.listen.host == "127.0.0.1");
  CHECK(c.server.listen.port == 0);
  CHECK(c.server.threads == 2);
  REQUIRE(c.downstreams.size() == 1);
  const auto& d = c.downstreams[0];
  CHECK(d.host == "127.0.0.1");
  CHECK(d.port == 9001);
  CHECK(d.base_path == "/base");
  CHECK(d.connect_timeout == milliseconds(50));
  CHECK(d.max_connections == 16);
  CHECK(d.dns_refresh == std::chrono::seconds(30));
  const auto& route = c.routes.at(0);
  CHECK(route.deadline == milliseconds(300));
  CHECK(route.response == response_shape::object);
  REQUIRE(route.params.size() == 1);
  CHECK(route.params[0].required);
  const auto& call = route.calls.at(0);
  CHECK(call.timeout == microseconds(milliseconds(100)));
  CHECK(call.required);
  CHECK(call.fields == std::vector<std::string>{"priceCent"});
  CHECK(nlohmann::json::parse("{" + call.fallback_members + "}") ==
        nlohmann::json{{"priceCent", -1}, {"label", "x"}, {"ok", false}});
}

TEST_CASE("the shipped default configuration loads") {
  const auto r = load_config_file(std::string(SOURCE_DIR) + "/config/gateway.yaml");
  for (const auto& e : r.errors) INFO(format_config_error("gateway.yaml", e));
  REQUIRE(r.config.has_value());
  const auto& route = r.config->routes.at(0);
  CHECK(route.path == "/api/offer/aggregate");
  CHECK(route.deadline == milliseconds(800));
  std::vector<std::string> names;
  for (const auto& c : route.calls) names.push_back(c.name);
  CHECK(names == std::vector<std::string>{"inventory", "channel-price", "coupon", "review-summary",
                                          "logistics-eta", "recommendation"});
}

TEST_CASE("each kind of error is reported at its line and column") {
  SECTION("unknown key") {
    const auto e = only_error("  threads: 2", "  thread: 2");
    CHECK(e.line == 3);
    CHECK(e.column == 3);
    CHECK_THAT(e.message, Catch::Contains("unknown key 'thread'"));
  }
  SECTION("wrong type") {
    const auto e = only_error("max_connections: 16", "max_connections: many");
    CHECK(e.line == 8);
    CHECK_THAT(e.message, Catch::Contains("max_connections"));
  }
  SECTION("bad duration") {
    const auto e = only_error("deadline: 300ms", "deadline: 300");
    CHECK(e.line == 11);
    CHECK(e.column == 15);
  }
  SECTION("unknown downstream") {
    const auto e = only_error("downstream: inventory", "downstream: nowhere");
    CHECK(e.line == 17);
    CHECK_THAT(e.message, Catch::Contains("unknown downstream 'nowhere'"));
  }
  SECTION("undeclared template parameter") {
    const auto e = only_error("sku={sku}", "sku={id}");
    CHECK(e.line == 18);
    CHECK_THAT(e.message, Catch::Contains("undeclared parameter 'id'"));
  }
  SECTION("bad url") {
    const auto e = only_error("http://127.0.0.1:9001/base/", "https://127.0.0.1:9001");
    CHECK(e.line == 6);
  }
  SECTION("bad regex") {
    const auto e = only_error("'^[A-Z0-9]+$'", "'^[A-Z'");
    CHECK(e.line == 13);
  }
  SECTION("fallback not a mapping") {
    const auto e = only_error("fallback: {priceCent: -1, label: \"x\", ok: false}", "fallback: [1]");
    CHECK(e.line == 22);
  }
  SECTION("a call name unfit for a header") {
    const auto e = only_error("      - name: inventory", "      - name: \"inv\\r\\nX-Evil: 1\"");
    CHECK(e.line == 16);
    CHECK_THAT(e.message, Catch::Contains("call name must be"));
  }
  SECTION("a route path with a query") {
    const auto e = only_error("  - path: /api/offer/aggregate", "  - path: /api/offer/aggregate?x=1");
    CHECK(e.line == 10);
  }
  SECTION("a dns_refresh under a second") {
    const auto e = only_error("    max_connections: 16", "    max_connections: 16\n    dns_refresh: 100ms");
    CHECK(e.line == 9);
    CHECK_THAT(e.message, Catch::Contains("dns_refresh"));
  }
  SECTION("YAML syntax error") {
    const auto e = only_error("  threads: 2", "  threads: [2");
    CHECK(e.line >= 3);
  }
}

TEST_CASE("a duplicate call name and duplicate keys are errors") {
  std::string text = good + R"(      - name: inventory
        downstream: inventory
        path: /other
)";
  auto r = load_config_text(text, "t.yaml");
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].line == 23);
  CHECK_THAT(r.errors[0].message, Catch::Contains("duplicate call name"));

  r = load_config_text("server:\n  threads: 1\n  threads: 2\n" + good.substr(good.find("downstreams:")),
                       "t.yaml");
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].line == 3);
  CHECK_THAT(r.errors[0].message, Catch::Contains("duplicate key"));
}

TEST_CASE("every problem is reported, not only the first") {
  const auto r = load_config_text("server: {listen: nowhere, bogus: 1}\nroutes: 5\nextra: {}\n", "t.yaml");
  CHECK(r.errors.size() >= 4);
  CHECK(format_config_error("t.yaml", r.errors[0]).rfind("t.yaml:1:", 0) == 0);
}

namespace {

std::string sql_config(const std::string& downstream_body, const std::string& call_extra = "") {
  return R"(downstreams:
  db:
    kind: sql
)" + downstream_body +
         R"(routes:
  - path: /api/sql
    params:
      sku: {required: true}
    calls:
      - name: inventory
        downstream: db
)" + call_extra;
}

std::vector<config_error> sql_errors(const std::string& text) {
  return load_config_text(text, "t.yaml").errors;
}

}  // namespace

TEST_CASE("a sql downstream reads its driver, pool, semaphore and query") {
  const auto r = load_config_text(sql_config(R"(    driver: postgres
    dsn: "host=db dbname=offers user=gw"
    pool_size: 32
    permits: 24
    max_waiting: 500
    query: SELECT price_cent AS "priceCent" FROM offers WHERE sku = :sku AND (:sku IS NOT NULL)
)"),
                                  "t.yaml");
  for (const auto& e : r.errors) INFO(format_config_error("t.yaml", e));
  REQUIRE(r.config.has_value());
  const auto& d = r.config->downstreams.at(0);
  CHECK(d.kind == downstream_kind::sql);
  CHECK(d.sql.driver == sql_driver::postgres);
  CHECK(d.sql.dsn == "host=db dbname=offers user=gw");
  CHECK_FALSE(d.sql.dsn_has_env);
  CHECK(d.sql.pool_size == 32);
  CHECK(d.sql.effective_permits() == 24);
  CHECK(d.sql.max_waiting == 500);
  CHECK(d.sql.statement ==
        R"(SELECT price_cent AS "priceCent" FROM offers WHERE sku = $1 AND ($1 IS NOT NULL))");
  CHECK(d.sql.params == std::vector<std::string>{"sku"});
  CHECK(d.connect_timeout == std::chrono::seconds(2));
}

TEST_CASE("a sql downstream's dsn takes ${ENV} values and remembers that it did") {
  ::setenv("GATEWAY_TEST_DB_PASSWORD", "s3cret", 1);
  const auto r = load_config_text(sql_config(R"(    driver: postgres
    dsn: "host=db password=${GATEWAY_TEST_DB_PASSWORD}"
    query: SELECT 1 AS one WHERE :sku IS NOT NULL
)"),
                                  "t.yaml");
  REQUIRE(r.config.has_value());
  CHECK(r.config->downstreams.at(0).sql.dsn == "host=db password=s3cret");
  CHECK(r.config->downstreams.at(0).sql.dsn_has_env);

  const auto errors = sql_errors(sql_config(R"(    driver: postgres
    dsn: "host=db password=${GATEWAY_TEST_UNSET_VARIABLE}"
    query: SELECT 1
)"));
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].line == 5);
  CHECK_THAT(errors[0].message, Catch::Contains("GATEWAY_TEST_UNSET_VARIABLE is not set"));
}

TEST_CASE("sql downstream mistakes are reported where they are") {
  SECTION("no driver") {
    const auto e = sql_errors(sql_config("    database: x.db\n    query: SELECT 1\n"));
    REQUIRE_FALSE(e.empty());
    CHECK_THAT(e[0].message, Catch::Contains("driver"));
  }
  SECTION("more permits than connections") {
    const auto e = sql_errors(sql_config(
        "    driver: sqlite\n    database: x.db\n    pool_size: 4\n    permits: 8\n    query: SELECT 1\n"));
    REQUIRE(e.size() == 1);
    CHECK(e[0].line == 7);
    CHECK_THAT(e[0].message, Catch::Contains("permits cannot exceed pool_size"));
  }
  SECTION("a query naming an undeclared parameter") {
    const auto e = sql_errors(
        sql_config("    driver: sqlite\n    database: x.db\n    query: SELECT 1 WHERE :sku = :nope\n"));
    REQUIRE(e.size() == 1);
    CHECK_THAT(e[0].message, Catch::Contains("undeclared parameter 'nope'"));
  }
  SECTION("a sql call with a path") {
    const auto e = sql_errors(
        sql_config("    driver: sqlite\n    database: x.db\n    query: SELECT 1\n", "        path: /x\n"));
    REQUIRE(e.size() == 1);
    CHECK_THAT(e[0].message, Catch::Contains("no path"));
  }
  SECTION("an http key on a sql downstream") {
    const auto e = sql_errors(
        sql_config("    driver: sqlite\n    database: x.db\n    url: http://x:1\n    query: SELECT 1\n"));
    REQUIRE(e.size() == 1);
    CHECK_THAT(e[0].message, Catch::Contains("unknown key 'url'"));
  }
  SECTION("a positional parameter") {
    const auto e =
        sql_errors(sql_config("    driver: postgres\n    dsn: host=x\n    query: SELECT 1 WHERE a = $1\n"));
    REQUIRE(e.size() == 1);
    CHECK_THAT(e[0].message, Catch::Contains(":name"));
  }
}
