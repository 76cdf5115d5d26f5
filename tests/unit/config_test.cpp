#include "gateway/config/config_json.hpp"
#include "gateway/config/config_loader.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>

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

TEST_CASE("a good file loads with every value", "[config]") {
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
  const auto& route = std::get<aggregate_route>(c.routes.at(0).kind);
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

TEST_CASE("the shipped configurations do not drift apart: the same routes, downstreams and their behaviour",
          "[config]") {
  // config/gateway.yaml (the quick start and the image), deploy/base (Kubernetes) and the postgres overlay
  // are copies kept by hand. What may differ: the listeners, limits, shutdown and connection caps sized for
  // where each runs, and where a downstream is (url, database, driver, dsn). Everything a client or a
  // downstream would notice must be the same.
  ::setenv("DB_PASSWORD", "x", 0);  // the postgres overlay's DSN takes it from the environment
  const auto shape = [](const std::string& relative) {
    const auto r = load_config_file(std::string(SOURCE_DIR) + relative, {.offline = true});
    for (const auto& e : r.errors) INFO(format_config_error(relative, e));
    REQUIRE(r.config.has_value());
    auto j = effective_config_json(*r.config);
    nlohmann::json kept;
    kept["routes"] = j["routes"];
    for (auto& [name, d] : j["downstreams"].items()) {
      for (const auto* where : {"url", "database", "driver", "dsn", "read_only", "kind", "max_connections"})
        d.erase(where);
      if (d.contains("sql")) {
        for (const auto* where : {"database", "driver", "dsn", "read_only"}) d["sql"].erase(where);
      }
      kept["downstreams"][name] = d;
    }
    return kept;
  };
  const auto shipped = shape("/config/gateway.yaml");
  for (const auto* copy :
       {"/deploy/base/config/gateway.yaml", "/deploy/overlays/postgres/config/gateway.yaml"}) {
    INFO(copy);
    const auto other = shape(copy);
    CHECK(other["routes"] == shipped["routes"]);
    for (auto& [name, d] : shipped["downstreams"].items()) {
      INFO("downstream " << name << ": " << nlohmann::json::diff(d, other["downstreams"][name]).dump());
      CHECK(other["downstreams"][name] == d);
    }
    CHECK(other["downstreams"].size() == shipped["downstreams"].size());
  }
}

TEST_CASE("the shipped default configuration loads", "[config]") {
  const auto r = load_config_file(std::string(SOURCE_DIR) + "/config/gateway.yaml");
  for (const auto& e : r.errors) INFO(format_config_error("gateway.yaml", e));
  REQUIRE(r.config.has_value());
  const auto& route = r.config->routes.at(0);
  CHECK(route.path == "/api/offer/aggregate");
  const auto& aggregate = std::get<aggregate_route>(route.kind);
  CHECK(aggregate.deadline == milliseconds(800));
  std::vector<std::string> names;
  for (const auto& c : aggregate.calls) names.push_back(c.name);
  CHECK(names == std::vector<std::string>{"inventory", "channel-price", "coupon", "review-summary",
                                          "logistics-eta", "recommendation"});
}

TEST_CASE("each kind of error is reported at its line and column", "[config]") {
  SECTION("unknown key") {
    const auto e = only_error("  threads: 2", "  thread: 2");
    CHECK(e.line == 3);
    CHECK(e.column == 3);
    CHECK_THAT(e.message, Catch::Contains("unknown key 'thread', did you mean 'threads'?"));
  }
  SECTION("unknown key: a slip gets a suggestion, anything else none") {
    auto e = only_error("        required: true", "        requird: true");
    CHECK_THAT(e.message, Catch::Contains("unknown key 'requird', did you mean 'required'?"));
    e = only_error("        timeout: 100ms", "        tiemout: 100ms");  // two letters swapped
    CHECK_THAT(e.message, Catch::Contains("did you mean 'timeout'?"));
    e = only_error("  threads: 2", "  colour: 2");
    CHECK_THAT(e.message, Catch::EndsWith("unknown key 'colour'"));
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
    const auto e = only_error("http://127.0.0.1:9001/base/", "ftp://127.0.0.1:9001");
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

TEST_CASE("a downstream's circuit breaker is on by default and read from circuit_breaker", "[config]") {
  const auto defaults = load_config_text(good, "t.yaml");
  REQUIRE(defaults.config);
  const auto& d = defaults.config->downstreams[0].breaker;
  CHECK(d.enabled);
  CHECK(d.min_calls == 20);
  CHECK(d.failure_percent == 50);
  CHECK(d.consecutive_failures == 0);
  CHECK(d.per_endpoint);

  std::string text = good;
  text.replace(
      text.find("    max_connections: 16"), 23,
      "    max_connections: 16\n    circuit_breaker: {window: 30s, min_calls: 5, failure_percent: 20, "
      "consecutive_failures: 0, cooldown: 250ms, half_open_calls: 4, per_endpoint: false}");
  const auto r = load_config_text(text, "t.yaml");
  REQUIRE(r.errors.empty());
  const auto& b = r.config->downstreams[0].breaker;
  CHECK(b.window == std::chrono::seconds(30));
  CHECK(b.min_calls == 5);
  CHECK(b.failure_percent == 20);
  CHECK(b.consecutive_failures == 0);
  CHECK(b.cooldown == std::chrono::milliseconds(250));
  CHECK(b.half_open_calls == 4);
  CHECK_FALSE(b.per_endpoint);
  const auto shown = effective_config_json(*r.config)["downstreams"]["inventory"]["circuit_breaker"];
  CHECK(shown["cooldown"] == "250ms");
  CHECK(shown["enabled"] == true);
  CHECK(shown["per_endpoint"] == false);
  CHECK(shown["failures"] == nlohmann::json{"connect", "reset", "timeout", "invalid_answer", "5xx"});
}

TEST_CASE("what counts as a downstream's failure is read from circuit_breaker.failures", "[config]") {
  const auto defaults = load_config_text(good, "t.yaml");
  REQUIRE(defaults.config);
  const auto& rule = defaults.config->downstreams[0].breaker.failures;
  CHECK(rule.kinds == (failure_rule::connect | failure_rule::reset | failure_rule::timeout |
                       failure_rule::invalid_answer | failure_rule::status_5xx));
  CHECK(rule.statuses.empty());
  CHECK(defaults.config->downstreams[0].max_connecting == 64);

  std::string text = good;
  text.replace(
      text.find("    max_connections: 16"), 23,
      "    max_connections: 16\n    max_connecting: 8\n    circuit_breaker: {failures: [connect, 5xx, 429]}");
  const auto r = load_config_text(text, "t.yaml");
  REQUIRE(r.errors.empty());
  const auto& d = r.config->downstreams[0];
  CHECK(d.breaker.failures.kinds == (failure_rule::connect | failure_rule::status_5xx));
  CHECK(d.breaker.failures.statuses == std::vector<std::uint16_t>{429});
  CHECK(d.max_connecting == 8);
  const auto shown = effective_config_json(*r.config)["downstreams"]["inventory"];
  CHECK(shown["circuit_breaker"]["failures"] == nlohmann::json{"connect", "5xx", "429"});
  CHECK(shown["max_connecting"] == 8);

  const auto e = only_error("    max_connections: 16",
                            "    max_connections: 16\n    circuit_breaker: {failures: [timeout, 4xx, slow]}");
  CHECK(e.line == 9);
  CHECK_THAT(e.message, Catch::Contains("not 'slow'"));
  CHECK_THAT(e.message, Catch::Contains("invalid_answer"));
}

TEST_CASE("an http downstream reads retry and hedge, retries are on and hedges off by default", "[config]") {
  const auto defaults = load_config_text(good, "t.yaml");
  REQUIRE(defaults.config);
  const auto& d = defaults.config->downstreams[0];
  CHECK(d.retry.attempts == 2);
  CHECK(d.retry.on_status == std::vector<unsigned>{502, 503});
  CHECK_FALSE(d.retry.on_reset);
  CHECK_FALSE(d.hedge.enabled);

  std::string text = good;
  text.replace(
      text.find("    max_connections: 16"), 23,
      "    max_connections: 16\n    retry: {attempts: 3, on_status: [503, 429], on_reset: true, backoff: 0ms}"
      "\n    hedge: {delay: p90, max_delay: 300ms}");
  const auto r = load_config_text(text, "t.yaml");
  REQUIRE(r.errors.empty());
  const auto& c = r.config->downstreams[0];
  CHECK(c.retry.attempts == 3);
  CHECK(c.retry.on_status == std::vector<unsigned>{503, 429});
  CHECK(c.retry.on_reset);
  CHECK(c.retry.backoff.count() == 0);
  CHECK(c.hedge.enabled);
  CHECK(c.hedge.delay.count() == 0);
  CHECK(c.hedge.percentile == 90);
  CHECK(c.hedge.max_delay == std::chrono::milliseconds(300));
  const auto shown = effective_config_json(*r.config)["downstreams"]["inventory"];
  CHECK(shown["hedge"]["delay"] == "p90");
  CHECK(shown["retry"]["on_status"] == nlohmann::json::array({503, 429}));
}

TEST_CASE("retry and hedge mistakes are reported where they are", "[config]") {
  const std::string at = "    max_connections: 16";
  SECTION("a status that is not one") {
    const auto e = only_error(at, at + "\n    retry: {on_status: [5xx]}");
    CHECK(e.line == 9);
    CHECK_THAT(e.message, Catch::Contains("on_status"));
  }
  SECTION("no attempt at all") {
    const auto e = only_error(at, at + "\n    retry: {attempts: 0}");
    CHECK_THAT(e.message, Catch::Contains("attempts"));
  }
  SECTION("a delay that is neither a duration nor a percentile") {
    const auto e = only_error(at, at + "\n    hedge: {delay: p100}");
    CHECK_THAT(e.message, Catch::Contains("p50 to p99"));
  }
  SECTION("bounds the wrong way round") {
    const auto e = only_error(at, at + "\n    hedge: {min_delay: 2s, max_delay: 1s}");
    CHECK_THAT(e.message, Catch::Contains("min_delay must not exceed max_delay"));
  }
}

TEST_CASE("circuit breaker and degraded_reason_field mistakes are reported where they are", "[config]") {
  SECTION("a percentage over 100") {
    const auto e = only_error("    max_connections: 16",
                              "    max_connections: 16\n    circuit_breaker: {failure_percent: 150}");
    CHECK(e.line == 9);
    CHECK_THAT(e.message, Catch::Contains("failure_percent"));
  }
  SECTION("an unknown key") {
    const auto e =
        only_error("    max_connections: 16", "    max_connections: 16\n    circuit_breaker: {cooldwn: 1s}");
    CHECK_THAT(e.message, Catch::Contains("unknown key 'cooldwn'"));
  }
  SECTION("a window too short to count in") {
    const auto e =
        only_error("    max_connections: 16", "    max_connections: 16\n    circuit_breaker: {window: 50ms}");
    CHECK_THAT(e.message, Catch::Contains("window must be at least 100ms"));
  }
  SECTION("a reason field that takes a gateway field's name") {
    const auto e =
        only_error("    response: object", "    response: object\n    degraded_reason_field: source");
    CHECK(e.line == 15);
    CHECK_THAT(e.message, Catch::Contains("degraded_reason_field"));
  }
}

TEST_CASE("a duplicate call name and duplicate keys are errors", "[config]") {
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

TEST_CASE("every problem is reported, not only the first", "[config]") {
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

TEST_CASE("a sql downstream reads its driver, pool, semaphore and query", "[config]") {
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

TEST_CASE("a sql downstream's dsn takes ${ENV} values and remembers that it did", "[config]") {
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

TEST_CASE("sql downstream mistakes are reported where they are", "[config]") {
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

namespace {

// The good config with each (from, to) replacement applied in turn.
std::string edited(std::initializer_list<std::pair<std::string, std::string>> edits) {
  std::string text = good;
  for (const auto& [from, to] : edits) {
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
  }
  return text;
}

// 1-based line and column of the first occurrence of `needle` in `text`.
std::pair<int, int> position_of(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  REQUIRE(at != std::string::npos);
  const auto line_start = text.rfind('\n', at);
  const auto column = line_start == std::string::npos ? at + 1 : at - line_start;
  return {
      static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n')) + 1,
      static_cast<int>(column)};
}

// The single error of `text`, which must be at the first occurrence of `at`.
config_error only_error_at(const std::string& text, const std::string& at) {
  const auto r = load_config_text(text, "t.yaml");
  for (const auto& e : r.errors) INFO(format_config_error("t.yaml", e));
  CHECK_FALSE(r.config.has_value());
  REQUIRE(r.errors.size() == 1);
  const auto [line, column] = position_of(text, at);
  CHECK(r.errors[0].line == line);
  CHECK(r.errors[0].column == column);
  return r.errors[0];
}

bool loads(const std::string& text) {
  const auto r = load_config_text(text, "t.yaml");
  for (const auto& e : r.errors) INFO(format_config_error("t.yaml", e));
  return r.config.has_value() && r.errors.empty();
}

}  // namespace

TEST_CASE("the admin listener may not take the public listener's address and port", "[config]") {
  SECTION("the public listener on the admin listener's default port") {
    const auto text = edited({{"listen: 127.0.0.1:0", "listen: 127.0.0.1:9901"}});
    const auto e = only_error_at(text, "127.0.0.1:9901");
    CHECK_THAT(e.message, Catch::Contains("admin.listen") && Catch::Contains("9901"));
  }
  SECTION("the same address and port") {
    const auto text = edited({{"listen: 127.0.0.1:0", "listen: 127.0.0.1:7000"},
                              {"downstreams:", "admin:\n  listen: 127.0.0.1:7000\ndownstreams:"}});
    const auto e = only_error_at(text, "127.0.0.1:7000\ndownstreams");
    CHECK_THAT(e.message, Catch::Contains("server.listen"));
  }
  SECTION("a wildcard address and a specific one on the same port") {
    CHECK_FALSE(loads(edited({{"listen: 127.0.0.1:0", "listen: 0.0.0.0:7000"},
                              {"downstreams:", "admin:\n  listen: 127.0.0.1:7000\ndownstreams:"}})));
    CHECK_FALSE(loads(edited({{"listen: 127.0.0.1:0", "listen: 127.0.0.1:7000"},
                              {"downstreams:", "admin:\n  listen: '[::]:7000'\ndownstreams:"}})));
  }
  SECTION("an IPv4-mapped IPv6 address and the IPv4 address it maps, or the IPv4 wildcard") {
    CHECK_FALSE(loads(edited({{"listen: 127.0.0.1:0", "listen: '[::ffff:127.0.0.1]:7000'"},
                              {"downstreams:", "admin:\n  listen: 127.0.0.1:7000\ndownstreams:"}})));
    CHECK_FALSE(
        loads(edited({{"listen: 127.0.0.1:0", "listen: 0.0.0.0:7000"},
                      {"downstreams:", "admin:\n  listen: '[::ffff:127.0.0.1]:7000'\ndownstreams:"}})));
    CHECK_FALSE(loads(edited({{"listen: 127.0.0.1:0", "listen: '[::ffff:0.0.0.0]:7000'"},
                              {"downstreams:", "admin:\n  listen: 127.0.0.1:7000\ndownstreams:"}})));
    CHECK(loads(edited({{"listen: 127.0.0.1:0", "listen: '[::ffff:127.0.0.2]:7000'"},
                        {"downstreams:", "admin:\n  listen: 127.0.0.1:7000\ndownstreams:"}})));
  }
  SECTION("distinct addresses, or ephemeral ports, are fine") {
    CHECK(loads(edited({{"listen: 127.0.0.1:0", "listen: 127.0.0.1:7000"},
                        {"downstreams:", "admin:\n  listen: 127.0.0.2:7000\ndownstreams:"}})));
    CHECK(loads(edited({{"downstreams:", "admin:\n  listen: 127.0.0.1:0\ndownstreams:"}})));
    CHECK(loads(edited({{"listen: 127.0.0.1:0", "listen: '[::1]:7000'"},
                        {"downstreams:", "admin:\n  listen: 127.0.0.1:7000\ndownstreams:"}})));
  }
  SECTION("a listen host that is not an IP address") {
    const auto text = edited({{"listen: 127.0.0.1:0", "listen: localhost:8080"}});
    const auto e = only_error_at(text, "localhost:8080");
    CHECK_THAT(e.message, Catch::Contains("not an IP address"));
  }
}

TEST_CASE("the admin listener's connection caps and timeouts: defaults, values, mistakes", "[config]") {
  auto r = load_config_text(good, "t.yaml");
  REQUIRE(r.config.has_value());
  CHECK(r.config->admin.max_connections == 256);
  CHECK(r.config->admin.max_connections_per_client == 64);
  CHECK(r.config->admin.header_timeout == std::chrono::seconds(2));
  CHECK(r.config->admin.idle_timeout == std::chrono::seconds(10));

  r = load_config_text(edited({{"downstreams:",
                                "admin:\n  max_connections: 1000\n  max_connections_per_client: 0\n"
                                "  header_timeout: 500ms\n  idle_timeout: 1m\ndownstreams:"}}),
                       "t.yaml");
  REQUIRE(r.config.has_value());
  CHECK(r.config->admin.max_connections == 1000);
  CHECK(r.config->admin.max_connections_per_client == 0);
  CHECK(r.config->admin.header_timeout == std::chrono::milliseconds(500));
  CHECK(r.config->admin.idle_timeout == std::chrono::minutes(1));
  const auto json = effective_config_json(*r.config);
  CHECK(json["admin"]["max_connections"] == 1000);
  CHECK(json["admin"]["max_connections_per_client"] == 0);
  CHECK(json["admin"]["header_timeout"] == "500ms");
  CHECK(json["admin"]["idle_timeout"] == "1m");

  // A lower total alone is fine (the per-address default then never applies); a per-address cap above
  // the total written out is a mistake.
  CHECK(loads(edited({{"downstreams:", "admin:\n  max_connections: 16\ndownstreams:"}})));
  auto e = only_error_at(
      edited({{"downstreams:",
               "admin:\n  max_connections: 16\n  max_connections_per_client: 17\ndownstreams:"}}),
      "17");
  CHECK_THAT(e.message, Catch::Contains("max_connections_per_client"));
  e = only_error_at(edited({{"downstreams:", "admin:\n  header_timeout: 80ms\ndownstreams:"}}), "80ms");
  CHECK_THAT(e.message, Catch::Contains("at least 100ms"));
  only_error_at(edited({{"downstreams:", "admin:\n  max_connections: 0\ndownstreams:"}}), "0\ndownstreams");
}

TEST_CASE("route path templates: their parameters are params, bad templates and overlaps are refused",
          "[config][routing]") {
  SECTION("a template's parameters can be used by calls and given a pattern") {
    const auto r = load_config_text(
        edited({{"path: /api/offer/aggregate", "path: /api/product/{sku}/{rest*}"}}), "t.yaml");
    REQUIRE(r.errors.empty());
    const auto& route = r.config->routes[0];
    CHECK(route.pattern.type() == route_pattern::kind::templated);
    const auto& params = std::get<aggregate_route>(route.kind).params;
    const auto sku =
        std::find_if(params.begin(), params.end(), [](const param_settings& p) { return p.name == "sku"; });
    REQUIRE(sku != params.end());
    CHECK(sku->in_path);
    CHECK(sku->required);
    CHECK(sku->matcher);  // the declared pattern applies to the path segment
    const auto rest =
        std::find_if(params.begin(), params.end(), [](const param_settings& p) { return p.name == "rest"; });
    REQUIRE(rest != params.end());
    CHECK(rest->in_path);
    CHECK_FALSE(rest->required);
  }
  SECTION("malformed templates") {
    for (const std::string bad :
         {"/api/{id", "/api/x{id}", "/api/{}", "/api/{rest*}/more", "/api/{a}/{a}", "/api/{bad name}"}) {
      INFO(bad);
      CHECK_FALSE(load_config_text(edited({{"path: /api/offer/aggregate", "path: '" + bad + "'"}}), "t.yaml")
                      .errors.empty());
    }
  }
  SECTION("two templates of one method matching the same paths") {
    std::string text = edited({{"path: /api/offer/aggregate", "path: /api/{x}/aggregate"}});
    const auto at = text.find("  - path: /api/{x}/aggregate");
    REQUIRE(at != std::string::npos);
    const auto route_text = text.substr(at);
    std::string second = route_text;
    second.replace(0, std::string("  - path: /api/{x}/aggregate").size(), "  - path: /api/{y}/aggregate");
    text += second;
    const auto r = load_config_text(text, "t.yaml");
    REQUIRE(r.errors.size() == 1);
    CHECK_THAT(r.errors[0].message, Catch::Contains("matches the same paths as /api/{x}/aggregate"));
  }
  SECTION("a route has a path or a path_prefix, not both") {
    const auto r = load_config_text(
        edited({{"path: /api/offer/aggregate", "path: /api/offer/aggregate\n    path_prefix: /api/"}}),
        "t.yaml");
    CHECK_FALSE(r.errors.empty());
  }
  SECTION("a call template's {name*} belongs in the path") {
    std::string problem;
    CHECK(path_template::parse("/files/{rest*}?v={v}", problem));
    CHECK_FALSE(path_template::parse("/files?r={rest*}", problem));
  }
}

TEST_CASE("a call timeout above the route deadline is refused", "[config]") {
  const auto text = edited({{"timeout: 100ms", "timeout: 900ms"}});
  const auto e = only_error_at(text, "900ms");
  CHECK_THAT(e.message,
             Catch::Contains("timeout 900ms exceeds the route deadline 300ms: it can never apply"));
  CHECK(loads(edited({{"timeout: 100ms", "timeout: 300ms"}})));
}

TEST_CASE("errors come out in line and column order", "[config]") {
  // The section errors are found before the unknown top-level key, which comes first in the file.
  const std::string text = "colour: blue\n" + edited({{"threads: 2", "threads: many"},
                                                      {"max_connections: 16", "max_connections: 0"},
                                                      {"deadline: 300ms", "deadline: soon"}});
  const auto r = load_config_text(text, "t.yaml");
  REQUIRE(r.errors.size() == 4);
  CHECK(r.errors[0].line == 1);
  CHECK_THAT(r.errors[0].message, Catch::Contains("unknown key 'colour'"));
  CHECK(std::is_sorted(r.errors.begin(), r.errors.end(), [](const config_error& a, const config_error& b) {
    return std::pair(a.line, a.column) < std::pair(b.line, b.column);
  }));
}

TEST_CASE("an out-of-range port is reported as such", "[config]") {
  SECTION("in a downstream url") {
    const auto text = edited({{"http://127.0.0.1:9001/base/", "http://127.0.0.1:70000/base/"}});
    const auto e = only_error_at(text, "http://127.0.0.1:70000");
    CHECK_THAT(e.message, Catch::Contains("port 70000 out of range 1-65535"));
  }
  SECTION("in a listen address") {
    const auto text = edited({{"listen: 127.0.0.1:0", "listen: 127.0.0.1:70000"}});
    const auto e = only_error_at(text, "127.0.0.1:70000");
    CHECK_THAT(e.message, Catch::Contains("port 70000 out of range 0-65535"));
  }
  SECTION("a port of many digits") {
    const auto text = edited({{"http://127.0.0.1:9001/base/", "http://127.0.0.1:123456789012345678901234/"}});
    const auto e = only_error_at(text, "http://127.0.0.1:123");
    CHECK_THAT(e.message, Catch::Contains("port 123456789012345678901234 out of range 1-65535"));
  }
}

TEST_CASE("a file that cannot be read is reported with the reason", "[config]") {
  auto r = load_config_file("/nonexistent-directory/gateway.yaml");
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].message == "cannot open file: No such file or directory");
  CHECK(format_config_error("g.yaml", r.errors[0]) == "g.yaml: cannot open file: No such file or directory");

  r = load_config_file(std::string(SOURCE_DIR) + "/config");
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].message == "cannot read file: Is a directory");
}

TEST_CASE("text that is not valid UTF-8 is a config error at its line and column", "[config]") {
  SECTION("a fallback value") {
    const auto text = edited({{"label: \"x\"", "label: \"x\xff\""}});
    const auto e = only_error_at(text, "\"x\xff\"");
    CHECK_THAT(e.message, Catch::Contains("fallback") && Catch::Contains("not valid UTF-8"));
  }
  SECTION("a fallback value from an escape (a lone surrogate)") {
    // yaml-cpp refuses it itself, as a syntax error.
    CHECK_FALSE(loads(edited({{"label: \"x\"", "label: \"\\udc00\""}})));
  }
  SECTION("a fallback key") {
    const auto text = edited({{"label: \"x\"", "lab\xc3l: \"x\""}});
    only_error_at(text, "lab\xc3l");
  }
  SECTION("a field name") {
    const auto text = edited({{"fields: [priceCent]", "fields: [price\xe2\x82]"}});
    only_error_at(text, "price\xe2\x82");
  }
  SECTION("a route path") {
    const auto text = edited({{"path: /api/offer/aggregate", "path: /api/\xc0\xafoffer"}});
    only_error_at(text, "/api/\xc0\xafoffer");
  }
  SECTION("a parameter name") {
    const auto text =
        edited({{"      sku: {required: true, pattern: '^[A-Z0-9]+$'}",
                 "      sku: {required: true, pattern: '^[A-Z0-9]+$'}\n      \xed\xa0\x80: {}"}});
    only_error_at(text, "\xed\xa0\x80");
  }
}

TEST_CASE("a downstream's max_connections below server.threads is refused", "[config]") {
  const auto text = edited({{"max_connections: 16", "max_connections: 1"}});
  const auto e = only_error_at(text, "1\nroutes");
  CHECK_THAT(e.message, Catch::Contains("server.threads"));
  CHECK(loads(edited({{"max_connections: 16", "max_connections: 2"}})));
  CHECK(loads(edited({{"threads: 2", "threads: 0"}, {"max_connections: 16", "max_connections: 1"}})));
  CHECK(loads(edited({{"downstreams:", "limits:\n  max_connections: 1\ndownstreams:"}})));  // clients: global
}
TEST_CASE("per-client connection and memory budget settings", "[config]") {
  auto r = load_config_text(good, "t.yaml");
  REQUIRE(r.config.has_value());
  CHECK(r.config->limits.max_connections_per_client == 0);
  CHECK(r.config->limits.memory_budget == 0);
  CHECK(r.warnings.empty());

  r = load_config_text(
      edited({{"downstreams:",
               "limits:\n  max_connections_per_client: 8\n  memory_budget: 512MiB\ndownstreams:"}}),
      "t.yaml");
  REQUIRE(r.config.has_value());
  CHECK(r.config->limits.max_connections_per_client == 8);
  CHECK(r.config->limits.memory_budget == 512u * 1024 * 1024);
  const auto json = effective_config_json(*r.config);
  CHECK(json["limits"]["max_connections_per_client"] == 8);
  CHECK(json["limits"]["memory_budget"] == 512u * 1024 * 1024);

  r = load_config_text(edited({{"downstreams:", "limits:\n  memory_budget: 2GiB\ndownstreams:"}}), "t.yaml");
  REQUIRE(r.config.has_value());
  CHECK(r.config->limits.memory_budget == 2ull * 1024 * 1024 * 1024);
}

TEST_CASE("a retired key (server.stack_cache) still loads, with a warning where it is", "[config]") {
  const auto text = edited({{"threads: 2", "threads: 2\n  stack_cache: 0"}});
  const auto r = load_config_text(text, "t.yaml");
  REQUIRE(r.config.has_value());
  CHECK(r.errors.empty());
  REQUIRE(r.warnings.size() == 1);
  const auto [line, column] = position_of(text, "0\ndownstreams");  // the value, as errors are
  CHECK(r.warnings[0].line == line);
  CHECK(r.warnings[0].column == column);
  CHECK_THAT(format_config_warning("t.yaml", r.warnings[0]),
             Catch::StartsWith("t.yaml:" + std::to_string(r.warnings[0].line) + ":") &&
                 Catch::Contains(": warning: server.stack_cache is retired"));
  CHECK_FALSE(effective_config_json(*r.config)["server"].contains("stack_cache"));
  // Its value is still checked: a value it never accepted is still an error.
  only_error_at(edited({{"threads: 2", "threads: 2\n  stack_cache: 65537"}}), "65537");
}

TEST_CASE("proxy routes: read with their defaults, what they cannot have is refused where it is",
          "[config][proxy]") {
  const std::string proxy_route = R"(  - path_prefix: /files/
    proxy:
      downstream: inventory
      rewrite: /blob/
      idle_timeout: 5s
      max_body_bytes: 1GiB
)";
  SECTION("a proxy route takes any method and keeps the settings") {
    const auto r = load_config_text(good + proxy_route, "t.yaml");
    REQUIRE(r.errors.empty());
    const auto& route = r.config->routes[1];
    REQUIRE(route.proxy() != nullptr);
    CHECK(route.method == "*");
    CHECK(route.aggregate() == nullptr);
    CHECK(route.proxy()->rewrite == "/blob/");
    CHECK(route.proxy()->timeout == std::chrono::seconds(30));
    CHECK(route.proxy()->idle_timeout == std::chrono::seconds(5));
    CHECK(route.proxy()->max_body_bytes == std::size_t{1} << 30);
    CHECK(effective_config_json(*r.config)["routes"][1]["proxy"]["downstream"] == "inventory");
  }
  SECTION("mistakes") {
    const std::pair<std::string, std::string> cases[] = {
        {"      rewrite: /blob/\n", "      rewrite: blob\n"},
        {"      downstream: inventory\n", "      downstream: nowhere\n"},
        {"  - path_prefix: /files/\n", "  - path_prefix: /files/\n    calls: []\n"},
        {"  - path_prefix: /files/\n", "  - path_prefix: /files/\n    headers: {forward: [Cookie]}\n"},
        {"  - path_prefix: /files/\n", "  - path_prefix: /files/\n    cors: {allow_origins: ['*']}\n"},
        {"  - path_prefix: /files/\n", "  - path: /files/{id}\n"},
    };
    for (const auto& [from, to] : cases) {
      std::string text = good + proxy_route;
      const auto at = text.find(from, good.size());
      REQUIRE(at != std::string::npos);
      text.replace(at, from.size(), to);
      INFO(to);
      const auto r = load_config_text(text, "t.yaml");
      CHECK(r.errors.size() == 1);
    }
  }
  SECTION("a proxy route of any method overlaps every route of its paths") {
    std::string text = good + proxy_route;
    text +=
        "  - path_prefix: /files/\n    method: POST\n    calls:\n      - {name: i, downstream: inventory, "
        "path: /x}\n";
    const auto r = load_config_text(text, "t.yaml");
    REQUIRE(r.errors.size() == 1);
    CHECK_THAT(r.errors[0].message, Catch::Contains("duplicate route"));
  }
}

TEST_CASE("${ENV} and ${ENV:-default} work in every value, credentials' values are hidden in /config",
          "[config][env]") {
  ::unsetenv("GW_TEST_UNSET");
  ::setenv("GW_TEST_PORT", "9007", 1);
  ::setenv("GW_TEST_API_TOKEN", "tok-s3cr3t", 1);
  ::setenv("GW_TEST_EMPTY", "", 1);
  const auto text = edited({{"  threads: 2", "  threads: ${GW_TEST_UNSET:-3}"},
                            {"http://127.0.0.1:9001/base/", "http://127.0.0.1:${GW_TEST_PORT}/base/"},
                            {"deadline: 300ms", "deadline: ${GW_TEST_EMPTY:-250ms}"},
                            {"sku={sku}", "sku={sku}&key=${GW_TEST_API_TOKEN}"}});
  const auto r = load_config_text(text, "t.yaml");
  REQUIRE(r.errors.empty());
  CHECK(r.config->server.threads == 3);
  CHECK(r.config->downstreams[0].port == 9007);
  CHECK(std::get<aggregate_route>(r.config->routes[0].kind).deadline == std::chrono::milliseconds(250));
  const auto shown = effective_config_json(*r.config).dump();
  CHECK(shown.find("tok-s3cr3t") == std::string::npos);
  CHECK(shown.find("<redacted>") != std::string::npos);
  CHECK(shown.find("9007") != std::string::npos);  // not a credential: shown as used

  const auto unset = load_config_text(edited({{"  threads: 2", "  threads: ${GW_TEST_UNSET}"}}), "t.yaml");
  REQUIRE(unset.errors.size() == 1);
  CHECK(unset.errors[0].line == 3);
  CHECK_THAT(unset.errors[0].message, Catch::Contains("GW_TEST_UNSET is not set"));
  CHECK_THAT(unset.errors[0].message, Catch::Contains(":-default"));
  ::unsetenv("GW_TEST_PORT");
  ::unsetenv("GW_TEST_API_TOKEN");
  ::unsetenv("GW_TEST_EMPTY");
}

TEST_CASE("downstream settings compare equal wherever they stand in the file and differ by any value",
          "[config][reload]") {
  // A reload keeps a downstream whose settings are equal: lines added above it (which move the positions
  // kept for error messages, e.g. a SQLite database's) must not make it a new one.
  config_error unreadable;
  const auto text = read_config_text(std::string(SOURCE_DIR) + "/config/gateway.yaml", unreadable);
  REQUIRE(text);
  const auto before = load_config_text(*text, "a.yaml");
  const auto moved = load_config_text("# one\n# two\n# three\n" + *text, "b.yaml");
  REQUIRE(before.config);
  REQUIRE(moved.config);
  const auto& a = before.config->downstreams;
  const auto& b = moved.config->downstreams;
  REQUIRE(a.size() == b.size());
  const auto sqlite =
      std::find_if(a.begin(), a.end(), [](const auto& d) { return d.kind == downstream_kind::sql; });
  REQUIRE(sqlite != a.end());
  CHECK(sqlite->sql.database_at.line != b[static_cast<std::size_t>(sqlite - a.begin())].sql.database_at.line);
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == b[i]);
  auto changed = a.front();
  changed.connect_timeout += milliseconds(1);
  CHECK_FALSE(changed == a.front());
  auto pool = *sqlite;
  pool.sql.pool_size += 1;
  CHECK_FALSE(pool == *sqlite);
}

TEST_CASE("the configuration's version is the first 16 hex digits of the text's SHA-256", "[config]") {
  CHECK(config_version("abc") == "ba7816bf8f01cfea");  // FIPS 180-2's example
  CHECK(config_version("") == "e3b0c44298fc1c14");
  CHECK(config_version(std::string(1000, 'a')) == "41edece42d63e8d9");
}
