// Answers shared between clients (the cache, stale-if-error, coalescing) against the real gateway and
// mock: two calls share an answer only when they send the downstream the same thing. A SQL call's stale
// answer is keyed by the names its query binds, not by the route's parameter order; the forwarded fields
// (X-Forwarded-Host: host-based tenants; X-Forwarded-For, unless the call removes it) split the cache; an
// answer that varies on more than the key (Vary: *) is not cached; a cookie reaches only the client whose
// call received it, never a coalesced follower.

#include "tests/integration/metric_scrape.hpp"
#include "tests/integration/sql_support.hpp"
#include "tests/support/offer_checks.hpp"

#include <chrono>
#include <string>
#include <vector>

using namespace test_support;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

json entry_of(const http_response& res, const std::string& source) {
  const auto body = json::parse(res.body, nullptr, false);
  if (!body.is_array()) return {};
  for (const auto& entry : body) {
    if (entry.value("source", "") == source) return entry;
  }
  return {};
}

// One SQLite downstream keeping stale answers, and two routes calling it whose parameters are declared in
// opposite orders: /a [tenant, id], /b [id, tenant].
std::string two_routes_config(const std::string& database) {
  return "server:\n  listen: 127.0.0.1:0\n  threads: 1\n"
         "downstreams:\n"
         "  db:\n"
         "    kind: sql\n"
         "    driver: sqlite\n"
         "    database: '" +
         database +
         "'\n"
         "    pool_size: 2\n"
         "    query: 'SELECT secret FROM accounts WHERE tenant = :tenant AND id = :id'\n"
         "    stale_if_error: {max_stale: 60s, max_bytes: 64KiB}\n"
         "    circuit_breaker: {enabled: false}\n"
         "routes:\n"
         "  - path: /a\n"
         "    params:\n"
         "      tenant: {required: true}\n"
         "      id: {required: true}\n"
         "    calls:\n"
         "      - {name: acct, downstream: db, fallback: {secret: none}}\n"
         "  - path: /b\n"
         "    params:\n"
         "      id: {required: true}\n"
         "      tenant: {required: true}\n"
         "    calls:\n"
         "      - {name: acct, downstream: db, fallback: {secret: none}}\n";
}

// One HTTP downstream with `extra` settings and a route with two calls to it, /x and /y, whose answers'
// `sess` cookies reach the client.
std::string cookie_route_config(const mock_downstream& mock, const std::string& extra) {
  return "server:\n  listen: 127.0.0.1:0\n  threads: 1\n"
         "downstreams:\n  mock:\n    url: " +
         mock.url() + "\n    retry: {attempts: 1}\n" + extra +
         "routes:\n"
         "  - path: /api/me\n"
         "    deadline: 3s\n"
         "    response_headers: {set_cookie: [sess]}\n"
         "    calls:\n"
         "      - {name: x, downstream: mock, path: '/x?sku=X'}\n"
         "      - {name: y, downstream: mock, path: '/y?sku=Y'}\n";
}

}  // namespace

TEST_CASE("shared answers: a SQL stale answer is keyed by the names the query binds, not by position",
          "[shared][stale][sql][sqlite]") {
  temp_dir dir;
  const auto database = dir.file("accounts.db");
  sql::sqlite_exec(database,
                   "CREATE TABLE accounts (tenant TEXT, id TEXT, secret TEXT);"
                   "INSERT INTO accounts VALUES ('t1', 'u1', 'secret-of-t1-u1')");
  gateway_process gw(two_routes_config(database));

  const auto own = http_get(gw.port(), "/a?tenant=t1&id=u1");
  REQUIRE(own.status == 200);
  REQUIRE(entry_of(own, "acct").value("secret", "") == "secret-of-t1-u1");

  // The same values in the other route's parameter order bind tenant=u1, id=t1: no such row. The answer
  // kept for tenant=t1, id=u1 is not this query's.
  const auto other = http_get(gw.port(), "/b?id=t1&tenant=u1");
  REQUIRE(other.status == 200);
  CHECK(other.degraded_reason("acct").value_or("") == "error");
  CHECK(entry_of(other, "acct").value("secret", "") == "none");

  // The same bound names and values through the other route are the same query: its stale answer.
  sql::sqlite_exec(database, "DELETE FROM accounts");
  const auto same = http_get(gw.port(), "/b?id=u1&tenant=t1");
  REQUIRE(same.status == 200);
  CHECK(same.degraded_reason("acct").value_or("") == "stale");
  CHECK(entry_of(same, "acct").value("secret", "") == "secret-of-t1-u1");
}

TEST_CASE("shared answers: a coalesced follower never gets its leader's Set-Cookie", "[shared][coalesce]") {
  mock_downstream mock({"--delay", "300ms"});
  mock.set_headers("x", {"Set-Cookie: sess=v1; HttpOnly"});
  gateway_process gw(cookie_route_config(mock, "    coalesce: true\n"));

  const auto answers = sql::get_concurrently(gw.port(), std::vector<std::string>(4, "/api/me"), 10s);
  int with_cookie = 0;
  for (const auto& a : answers) {
    INFO(sql::describe(a));
    REQUIRE(a.response.status == 200);
    CHECK_FALSE(a.response.has_header("X-Degraded"));
    const auto cookies = a.response.all("Set-Cookie");
    CHECK(cookies.size() <= 1);
    with_cookie += static_cast<int>(cookies.size());
  }
  // Every cookie a client got came from a downstream answer of its own: as many answers as cookies.
  const auto stats = mock.stats();
  CHECK(mock.path_counter(stats, "x", "requests") == with_cookie);
  CHECK(with_cookie == 4);
  // An answer without a cookie is still shared.
  CHECK(mock.path_counter(stats, "y", "requests") <= 2);
  CHECK(metric(gw, "gateway_downstream_coalesced_total", {{"downstream", "mock"}}) >= 2);
}

TEST_CASE("shared answers: X-Forwarded-Host is part of the cache key (host-based tenants)",
          "[shared][cache]") {
  mock_downstream mock({"--delay", "2ms", "--cache-control", "public, max-age=60"});
  seed_config cfg{mock.url()};
  cfg.threads = 1;
  cfg.downstream_extra = "    cache: true\n";
  gateway_process gw(cfg.yaml());

  const auto target = offer_target("T1");
  check_offer(http_get(gw.port(), target, {{"Host", "tenant-a.example"}}), "T1");
  CHECK(mock.path_counter(mock.stats(), "coupon", "requests") == 1);
  check_offer(http_get(gw.port(), target, {{"Host", "tenant-b.example"}}), "T1");
  CHECK(mock.path_counter(mock.stats(), "coupon", "requests") == 2);  // tenant b's own call
  check_offer(http_get(gw.port(), target, {{"Host", "tenant-a.example"}}), "T1");
  CHECK(mock.path_counter(mock.stats(), "coupon", "requests") == 2);  // tenant a's, from the cache
}

TEST_CASE("shared answers: X-Forwarded-For keeps answers per client unless the call removes it",
          "[shared][cache]") {
  mock_downstream mock({"--delay", "2ms"});
  mock.set_headers("x", {"Cache-Control: max-age=60"});
  mock.set_headers("y", {"Cache-Control: max-age=60"});
  gateway_process gw(
      "server:\n  listen: 127.0.0.1:0\n  threads: 1\n  trusted_proxies: [127.0.0.1]\n"
      "downstreams:\n  mock:\n    url: " +
      mock.url() +
      "\n    cache: true\n"
      "routes:\n"
      "  - path: /api/shared\n"
      "    calls:\n"
      "      - {name: x, downstream: mock, path: '/x?sku=X'}\n"
      "      - {name: y, downstream: mock, path: '/y?sku=Y', headers: {remove: [X-Forwarded-For]}}\n");
  // Two clients behind the trusted proxy, each asking twice.
  for (const auto* client : {"203.0.113.1", "203.0.113.2", "203.0.113.1", "203.0.113.2"}) {
    const auto res = http_get(gw.port(), "/api/shared", {{"X-Forwarded-For", client}});
    REQUIRE(res.status == 200);
    CHECK_FALSE(res.has_header("X-Degraded"));
  }
  const auto stats = mock.stats();
  CHECK(mock.path_counter(stats, "x", "requests") == 2);  // one per client address
  CHECK(mock.path_counter(stats, "y", "requests") == 1);  // shared by both
}

TEST_CASE("shared answers: an answer that varies on more than the key is not cached", "[shared][cache]") {
  mock_downstream mock({"--delay", "2ms"});
  gateway_process gw(cookie_route_config(mock, "    cache: true\n"));
  const auto calls_after_two = [&](const std::vector<std::string>& fields) {
    mock.set_headers("x", fields);
    const auto before = mock.path_counter(mock.stats(), "x", "requests");
    for (int i = 0; i < 2; ++i) {
      const auto res = http_get(gw.port(), "/api/me");
      REQUIRE(res.status == 200);
      CHECK_FALSE(res.has_header("X-Degraded"));
    }
    return mock.path_counter(mock.stats(), "x", "requests") - before;
  };
  CHECK(calls_after_two({"Cache-Control: max-age=60", "Vary: *"}) == 2);
  // X-Request-Id differs on every request and is not in the key.
  CHECK(calls_after_two({"Cache-Control: max-age=60", "Vary: Accept-Language, X-Request-Id"}) == 2);
  // A field the gateway never sends is the same (absent) on every call: shared.
  CHECK(calls_after_two({"Cache-Control: max-age=60", "Vary: Accept-Language"}) == 1);
}
