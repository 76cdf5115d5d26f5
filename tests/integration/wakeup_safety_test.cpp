// The shipped topology (one SQL call and HTTP calls in one route) under every way a request can be cut
// short: the client leaving, the deadline, shutdown.timeout and a second signal. A cancel that woke a
// coroutine inside the canceller's own loop let the request end and free its stack under that loop; a freed
// stack is unmapped at once, so such a use after free faults instead of going unnoticed. Each case ends with
// the gateway alive and a clean exit 0.

#include "tests/integration/sql_support.hpp"

#include <csignal>
#include <thread>

using namespace test_support;
using namespace test_support::sql;
using namespace std::chrono_literals;

namespace {

// Counts to :n on the SQLite pool: seconds of work for a large n, interrupted at the deadline or cancel.
const std::string counting_query =
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < CAST(:n AS INTEGER)) "
    "SELECT count(*) AS n FROM c";
constexpr const char* slow_n = "2000000000";  // far longer than any test waits

struct mixed_route {
  explicit mixed_route(const std::string& deadline, const std::string& shutdown = {})
      : mock({"--delay", "1ms"}), gw(yaml(deadline, shutdown)) {}

  std::string yaml(const std::string& deadline, const std::string& shutdown) {
    const auto db = dir.file("count.db");
    sqlite_exec(db, "CREATE TABLE unused (x INTEGER)");
    std::string y = "server:\n  listen: 127.0.0.1:0\n  threads: 1\n";
    y += "downstreams:\n";
    y += "  db:\n    kind: sql\n    driver: sqlite\n    database: '" + db + "'\n    pool_size: 4\n";
    y += "    query: '" + counting_query + "'\n";
    y += "  coupon:\n    url: " + mock.url() + "\n";
    y += "routes:\n  - path: /api/mixed\n    deadline: " + deadline + "\n";
    y += "    params:\n      n: {required: true}\n      sku: {required: true}\n";
    y += "    calls:\n";
    y += "      - name: inventory\n        downstream: db\n        fallback: {n: -1}\n";
    y += "      - name: coupon\n        downstream: coupon\n        path: /coupon?sku={sku}\n";
    y += "        fallback: {priceCent: -1}\n";
    return y + shutdown;
  }

  static std::string target(const std::string& n, const std::string& sku) {
    return "/api/mixed?n=" + n + "&sku=" + sku;
  }

  // Sends a slow request on `conn` and waits until both of its calls are running.
  void start_slow(http_connection& conn, const std::string& sku) {
    const auto before = mock.path_counter(mock.stats(), "coupon", "requests");
    conn.send_request("GET", target(slow_n, sku));
    mock.wait_stats([&](const auto& s) { return mock.path_counter(s, "coupon", "requests") > before; });
  }

  // A fast request is answered in full: the gateway is alive and its SQL pool usable.
  void check_alive() {
    auto res = http_get(gw.port(), target("10", "ALIVE"));
    INFO(res.body);
    REQUIRE(res.status == 200);
    CHECK(res.json()[0]["n"] == 10);
    CHECK_FALSE(res.has_header("x-degraded"));
  }

  temp_dir dir;
  mock_downstream mock;
  gateway_process gw;
};

void check_exit_status(gateway_process& gw, const std::optional<exit_status>& status) {
  INFO("gateway stderr (tail):\n"
       << [&] {
            auto err = gw.process().stderr_text();
            return err.size() > 3000 ? err.substr(err.size() - 3000) : err;
          }());
  REQUIRE(status.has_value());
  CHECK(status->exited);
  CHECK(status->code == 0);
}

}  // namespace

TEST_CASE("SQL + HTTP route: clients leaving mid-request never crash the gateway", "[cancel][sql][wake]") {
  mixed_route env("30s");
  for (int i = 0; i < 20; ++i) {
    http_connection conn(env.gw.port());
    env.start_slow(conn, numbered_sku("GONE", i));
    if (i % 2 == 0) {
      conn.close();
    } else {
      conn.reset();
    }
  }
  env.check_alive();
  check_clean_exit(env.gw);
}

TEST_CASE("SQL + HTTP route: the deadline cuts the SQL call and the gateway carries on",
          "[deadline][sql][wake]") {
  mixed_route env("300ms");
  for (int i = 0; i < 10; ++i) {
    const auto start = steady_clock::now();
    auto res = http_get(env.gw.port(), mixed_route::target(slow_n, numbered_sku("D", i)));
    INFO(res.body);
    CHECK(res.status == 200);
    CHECK(res.degraded_calls().value_or("") == "inventory");
    CHECK(elapsed_since(start) < 300ms + 1500ms);  // generous: ASan on two busy cores
  }
  env.check_alive();
  check_clean_exit(env.gw);
}

TEST_CASE("SQL + HTTP route: shutdown.timeout cancels the SQL call and the gateway exits 0",
          "[drain][sql][wake]") {
  mixed_route env("30s", "shutdown:\n  drain_delay: 0s\n  timeout: 300ms\n");
  std::vector<http_connection> conns;
  for (int i = 0; i < 3; ++i) {
    conns.emplace_back(env.gw.port());
    env.start_slow(conns.back(), numbered_sku("S", i));
  }
  check_exit_status(env.gw, env.gw.process().stop(SIGTERM, 10s));
  for (auto& conn : conns) CHECK(conn.wait_closed_by_peer(2s));
}

TEST_CASE("SQL + HTTP route: a second signal stops at once and the gateway exits 0", "[drain][sql][wake]") {
  mixed_route env("30s", "shutdown:\n  drain_delay: 10s\n  timeout: 30s\n");
  std::vector<http_connection> conns;
  for (int i = 0; i < 3; ++i) {
    conns.emplace_back(env.gw.port());
    env.start_slow(conns.back(), numbered_sku("Q", i));
  }
  REQUIRE(::kill(env.gw.process().pid(), SIGTERM) == 0);
  REQUIRE(eventually([&] { return http_get(env.gw.admin_port(), "/readyz").status == 503; }, 3s));
  check_exit_status(env.gw, env.gw.process().stop(SIGTERM, 10s));
  for (auto& conn : conns) CHECK(conn.wait_closed_by_peer(2s));
}
