// SQL downstream on PostgreSQL (libpq) against a throwaway cluster: a call's entry is the first row as a
// JSON object; the permit semaphore bounds the queries in flight (seen in pg_stat_activity) and its
// waiting list is capped; a deadline cancels the query on the server; a client leaving frees its place in
// the queue; the pool reconnects after a database restart; JSON nested too deep, a parameter holding a NUL
// and a long result each stay bounded.

#include "tests/integration/sql_support.hpp"
#include "tests/support/postgres_server.hpp"
#include "tests/support/prometheus_text.hpp"

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

using namespace test_support;
using namespace test_support::sql;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

const json a1_columns = {{"priceCent", 1999}, {"stock", 7}};
// 0.2 s on the server per call. The void pg_sleep column may come as an extra key; classify() ignores it.
const std::string sleepy_offer_query =
    R"(SELECT pg_sleep(0.2), price_cent AS "priceCent", stock FROM offers WHERE sku = :sku)";
// Sleeps :secs seconds on the server and answers {"x": 1}.
const std::string sleep_query = "SELECT 1 AS x FROM pg_sleep(CAST(:secs AS float8))";
const json sleep_columns = {{"x", 1}};

void create_offers(const postgres_server& pg) {
  pg_client db(pg.dsn());
  db.exec(
      "CREATE TABLE offers (sku text PRIMARY KEY, price_cent int, stock int);"
      "INSERT INTO offers VALUES ('A1', 1999, 7), ('B2', 500, 0), ('C3', 12, NULL)");
}

struct session_count {
  int open = 0;      // sessions of the gateway
  int sleeping = 0;  // of them, those running a pg_sleep right now
};

// The gateway's sessions are all but the ones pg_client opens.
session_count gateway_sessions(pg_client& db) {
  auto row = db.exec(
                   "SELECT count(*), count(*) FILTER (WHERE state = 'active' AND query LIKE '%pg_sleep%') "
                   "FROM pg_stat_activity WHERE backend_type = 'client backend' AND application_name <> '" +
                   std::string(pg_client::application_name) + "'")
                 .at(0);
  return {std::stoi(row.at(0)), std::stoi(row.at(1))};
}

// Samples gateway_sessions every ~10 ms on a session of its own until stopped, keeping the maxima.
class session_sampler {
 public:
  explicit session_sampler(const std::string& dsn) : db_(dsn), thread_([this] { run(); }) {}
  ~session_sampler() { stop(); }

  void stop() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // Valid after stop().
  int max_open() const { return max_.open; }
  int max_sleeping() const { return max_.sleeping; }
  int samples() const { return samples_; }
  const std::string& error() const { return error_; }

 private:
  void run() {
    try {
      while (!done_) {
        auto now = gateway_sessions(db_);
        max_.open = std::max(max_.open, now.open);
        max_.sleeping = std::max(max_.sleeping, now.sleeping);
        ++samples_;
        std::this_thread::sleep_for(10ms);
      }
    } catch (const std::exception& e) {
      error_ = e.what();
    }
  }

  pg_client db_;
  std::atomic<bool> done_{false};
  session_count max_;  // written by the thread only, read after stop()
  int samples_ = 0;
  std::string error_;
  std::thread thread_;  // last: starts once the members above exist
};

// A burst of `requests` concurrent A1 requests against pg_sleep(0.2) behind 4 permits over a pool of 8,
// with the route deadline `deadline`, while a sampler watches the server's sessions.
struct burst_result {
  tally answers;
  int max_open = 0, max_sleeping = 0, samples = 0;
  std::string sampler_error;
};

// The answer of a route whose call is required: a failed call is a 502 naming its detail.
void check_required_call_fails(std::uint16_t port, const std::string& target, const std::string& detail) {
  auto res = timed_get(port, target);
  INFO(target << ": " << describe(res));
  CHECK(res.response.status == 502);
  CHECK(res.response.body.find(detail) != std::string::npos);
}

double gateway_metric(const gateway_process& gw, const std::string& name) {
  return total(parse_exposition(http_get(gw.admin_port(), "/metrics").body), name);
}

burst_result permit_burst(postgres_server& pg, const std::string& deadline, int requests) {
  create_offers(pg);
  auto cfg = postgres_config(pg.dsn(), sleepy_offer_query);
  cfg.pool_size = 8;
  cfg.permits = 4;
  cfg.deadline = deadline;
  gateway_process gw(cfg.yaml());
  session_sampler sampler(pg.dsn());
  auto answers = get_concurrently(gw.port(), std::vector<std::string>(requests, "/api/sql?sku=A1"), 15s);
  sampler.stop();
  return {classify_all(answers, a1_columns), sampler.max_open(), sampler.max_sleeping(), sampler.samples(),
          sampler.error()};
}

}  // namespace

TEST_CASE("postgres_server: a throwaway cluster that stops, restarts on its port and is removed",
          "[sql][postgres]") {
  std::string dsn;
  {
    postgres_server pg;
    REQUIRE(pg.running());
    CHECK(pg.port() >= 1024);
    CHECK(pg.port() < 32768);
    dsn = pg.dsn();
    {
      pg_client db(dsn);
      db.exec("CREATE TABLE t (k text PRIMARY KEY, v int); INSERT INTO t VALUES ('a', 1), ('b', NULL)");
      CHECK(db.exec("SELECT k, v FROM t ORDER BY k") ==
            std::vector<std::vector<std::string>>{{"a", "1"}, {"b", ""}});
      CHECK(gateway_sessions(db).open == 0);
      CHECK_THROWS_AS(db.exec("SELECT nope"), std::runtime_error);
    }
    auto port = pg.port();
    pg.stop();
    CHECK_FALSE(pg.running());
    CHECK_THROWS_AS(pg_client(dsn), std::runtime_error);
    pg.start();
    CHECK(pg.port() == port);
    pg_client db(dsn);
    CHECK(db.value("SELECT count(*) FROM t") == "2");
  }
  CHECK_THROWS_AS(pg_client(dsn), std::runtime_error);  // stopped by the destructor
}

TEST_CASE("postgres: the first row becomes the call's entry and no row falls back", "[sql][postgres]") {
  postgres_server pg;
  create_offers(pg);
  auto cfg = postgres_config(
      pg.dsn(),
      R"(SELECT price_cent AS "priceCent", stock, sku AS name, stock > 0 AS "inStock" FROM offers WHERE sku = :sku)");
  cfg.pool_size = 3;
  cfg.permits = 2;
  gateway_process gw(cfg.yaml());

  pg_client db(pg.dsn());
  CHECK(gateway_sessions(db).open == 3);  // the pool is connected before the gateway listens

  auto res = http_get(gw.port(), "/api/sql?sku=A1");
  INFO(res.body);
  REQUIRE(res.status == 200);
  CHECK_FALSE(res.has_header("x-degraded"));
  CHECK(res.json() == json::parse(R"([{"priceCent": 1999, "stock": 7, "name": "A1", "inStock": true,
                                       "source": "inventory", "degraded": false}])"));

  res = http_get(gw.port(), "/api/sql?sku=C3");
  INFO(res.body);
  CHECK(res.json() == json::parse(R"([{"priceCent": 12, "stock": null, "name": "C3", "inStock": null,
                                       "source": "inventory", "degraded": false}])"));

  check_no_row_falls_back(gw.port());
}

TEST_CASE("postgres: at most `permits` queries run at once and the pool stays within pool_size",
          "[sql][postgres]") {
  postgres_server pg;
  // 60 requests x 0.2 s / 4 permits = 3 s until the last query ends: half the deadline, so every answer
  // is expected to be the real one even on a busy machine (90% are required).
  constexpr int requests = 60;
  const auto run = permit_burst(pg, "6s", requests);
  INFO(run.answers.report << "most sessions " << run.max_open << ", most sleeping " << run.max_sleeping
                          << ", " << run.samples << " samples " << run.sampler_error);
  CHECK(run.sampler_error.empty());
  CHECK(run.samples >= 20);
  CHECK(run.answers.wrong == 0);
  CHECK(run.answers.answered >= requests * 9 / 10);
  CHECK(run.max_sleeping <= 4);
  CHECK(run.max_sleeping >= 2);  // the permits are used in parallel
  CHECK(run.max_open <= 8);
}

TEST_CASE("postgres: under a short deadline each answer is the real one or the fallback, on time",
          "[sql][postgres]") {
  postgres_server pg;
  // 40 requests x 0.2 s / 4 permits = 2 s of work against 0.5 s: the first two waves can answer, the
  // others fall back at the deadline, whether they wait for a permit or their query runs.
  constexpr int requests = 40;
  const auto run = permit_burst(pg, "500ms", requests);
  INFO(run.answers.report << "most sleeping " << run.max_sleeping << " " << run.sampler_error);
  CHECK(run.answers.wrong == 0);
  CHECK(run.answers.answered >= 4);  // the first wave ends at about 0.2 s
  CHECK(run.answers.fell_back >= requests / 2);
  CHECK(run.answers.slowest <= 500ms + answer_slack);
  CHECK(run.max_sleeping <= 4);

  pg_client db(pg.dsn());
  CHECK(eventually([&] { return gateway_sessions(db).sleeping == 0; }, 1s));  // cut queries were cancelled
}

TEST_CASE("postgres: the deadline cancels the query on the server and frees its connection",
          "[sql][postgres]") {
  postgres_server pg;
  auto cfg = postgres_config(pg.dsn(), sleep_query);
  cfg.params = {"secs"};
  cfg.pool_size = 1;
  cfg.permits = 1;
  cfg.deadline = "300ms";
  gateway_process gw(cfg.yaml());

  session_sampler sampler(pg.dsn());
  auto slow = timed_get(gw.port(), "/api/sql?secs=5");
  sampler.stop();
  INFO("slow: " << describe(slow) << "\nmost sleeping " << sampler.max_sleeping() << " " << sampler.error());
  CHECK(classify(slow.response, sleep_columns) == outcome::fell_back);
  CHECK(slow.latency <= 300ms + answer_slack);
  CHECK(sampler.max_sleeping() == 1);  // the query did reach the server

  pg_client db(pg.dsn());
  CHECK(eventually([&] { return gateway_sessions(db).sleeping == 0; }, 1s));  // not left to run for 5 s

  // The pool's only connection comes back once the cancelled query is drained, a moment after the server
  // dropped it (the maintenance thread may be slow to run on a loaded machine): poll for up to 2 s.
  timed_answer quick;
  const bool answered = eventually(
      [&] {
        quick = timed_get(gw.port(), "/api/sql?secs=0");
        return classify(quick.response, sleep_columns) == outcome::answered;
      },
      2s);
  INFO("quick: " << describe(quick));
  CHECK(answered);
}

TEST_CASE("postgres: calls beyond max_waiting fall back at once", "[sql][postgres]") {
  postgres_server pg;
  create_offers(pg);
  auto cfg = postgres_config(
      pg.dsn(), R"(SELECT pg_sleep(0.5), price_cent AS "priceCent", stock FROM offers WHERE sku = :sku)");
  cfg.pool_size = 1;
  cfg.permits = 1;
  cfg.max_waiting = 2;
  cfg.deadline = "3s";
  gateway_process gw(cfg.yaml());

  // One query runs and two wait (answered at about 0.5, 1 and 1.5 s, inside the 3 s deadline); the
  // waiting list is full for the other three, which fall back without waiting.
  auto answers = get_concurrently(gw.port(), std::vector<std::string>(6, "/api/sql?sku=A1"), 10s);
  auto t = classify_all(answers, a1_columns);
  INFO(t.report);
  CHECK(t.wrong == 0);
  CHECK(t.fell_back >= 3);
  CHECK(t.answered >= 1);
  for (std::size_t i = 0; i < answers.size(); ++i)
    if (t.outcomes[i] == outcome::fell_back) CHECK(answers[i].latency < 400ms);
}

TEST_CASE("postgres: calls fall back while the database is down and recover after it restarts",
          "[sql][postgres]") {
  postgres_server pg;
  create_offers(pg);
  auto cfg = postgres_config(pg.dsn(), offer_query);
  cfg.pool_size = 2;
  cfg.permits = 2;
  cfg.deadline = "3s";
  gateway_process gw(cfg.yaml());
  auto before = timed_get(gw.port(), "/api/sql?sku=A1");
  INFO("before: " << describe(before));
  REQUIRE(classify(before.response, a1_columns) == outcome::answered);
  CHECK(gateway_metric(gw, "gateway_db_reconnects_total") == 0);

  pg.stop();
  for (int i = 0; i < 3; ++i) {  // enough to meet every pooled connection, now broken
    auto down = timed_get(gw.port(), "/api/sql?sku=A1");
    INFO("while down: " << describe(down));
    CHECK(classify(down.response, a1_columns) == outcome::fell_back);
    CHECK(down.latency < 1s);
  }

  pg.start();
  timed_answer last;
  bool recovered = eventually(
      [&] {
        last = timed_get(gw.port(), "/api/sql?sku=A1");
        auto o = classify(last.response, a1_columns);
        CHECK(o != outcome::wrong);
        return o == outcome::answered;
      },
      10s);
  INFO("last: " << describe(last));
  CHECK(recovered);
  CHECK(gateway_metric(gw, "gateway_db_reconnects_total") >= 1);  // the broken connections replaced
  CHECK(gw.running());
}

TEST_CASE("postgres: a client leaving while queued for a permit frees its place in the queue",
          "[sql][postgres]") {
  postgres_server pg;
  auto cfg = postgres_config(pg.dsn(), sleep_query);
  cfg.params = {"secs"};
  cfg.pool_size = 1;
  cfg.permits = 1;
  cfg.max_waiting = 1;
  cfg.deadline = "8s";
  gateway_process gw(cfg.yaml());
  pg_client db(pg.dsn());

  // A holds the only permit for 3 s.
  http_connection a(gw.port());
  a.send_request("GET", "/api/sql?secs=3");
  REQUIRE(eventually([&] { return gateway_sessions(db).sleeping == 1; }, 2s));

  // B waits for the permit and fills the waiting list. Nothing outside shows that B is queued, so a short
  // pause puts it before the probe, and the probe confirms it: with the list full it falls back at once.
  http_connection b(gw.port());
  b.send_request("GET", "/api/sql?secs=0");
  std::this_thread::sleep_for(100ms);
  auto probe = timed_get(gw.port(), "/api/sql?secs=0");
  INFO("probe: " << describe(probe));
  REQUIRE(classify(probe.response, sleep_columns) == outcome::fell_back);
  CHECK(probe.latency < 400ms);

  // B leaves; C takes its place while A still runs (retried while the gateway has not yet noticed B's
  // close), waits for A and is answered.
  b.close();
  timed_answer c;
  for (auto give_up = steady_clock::now() + 1s;;) {
    REQUIRE(gateway_sessions(db).sleeping == 1);  // A still holds the permit
    c = timed_get(gw.port(), "/api/sql?secs=0");
    if (classify(c.response, sleep_columns) != outcome::fell_back || steady_clock::now() >= give_up) break;
    std::this_thread::sleep_for(50ms);
  }
  INFO("C: " << describe(c));
  CHECK(classify(c.response, sleep_columns) == outcome::answered);
  CHECK(c.latency >= 300ms);  // it waited for A

  auto a_answer = a.read_response(8s);
  INFO("A: " << a_answer.body);
  CHECK(classify(a_answer, sleep_columns) == outcome::answered);
}

TEST_CASE("postgres: a JSON column nested deeper than the gateway's limit fails the call, not the process",
          "[sql][postgres]") {
  postgres_server pg;
  // The same :depth nested arrays as jsonb and as json, and a string full of brackets that nests nothing.
  const std::string query =
      "SELECT CAST(d AS jsonb) AS doc, CAST(d AS json) AS raw, to_jsonb('\"' || repeat('[{', 500)) AS text "
      "FROM (SELECT repeat('[', CAST(:depth AS int)) || repeat(']', CAST(:depth AS int)) AS d) s";
  auto cfg = postgres_config(pg.dsn(), query);
  cfg.params = {"depth"};
  cfg.pool_size = 1;
  cfg.permits = 1;
  cfg.deadline = "3s";
  gateway_process gw(cfg.yaml());

  // 63 levels in a column, 64 with the row around them: the deepest answer the gateway passes on.
  const json deepest = json::parse(std::string(63, '[') + std::string(63, ']'));
  std::string brackets = "\"";
  for (int i = 0; i < 500; ++i) brackets += "[{";
  const json columns = {{"doc", deepest}, {"raw", deepest}, {"text", brackets}};
  auto ok = timed_get(gw.port(), "/api/sql?depth=63");
  INFO("63: " << describe(ok));
  CHECK(classify(ok.response, columns) == outcome::answered);

  for (const char* depth : {"64", "1000"}) {
    auto deep = timed_get(gw.port(), std::string("/api/sql?depth=") + depth);
    INFO(depth << ": " << describe(deep));
    CHECK(classify(deep.response, columns) == outcome::fell_back);
    REQUIRE(gw.running());
  }
  auto again = timed_get(gw.port(), "/api/sql?depth=63");  // the connection went back to the pool
  INFO("63 again: " << describe(again));
  CHECK(classify(again.response, columns) == outcome::answered);

  cfg.required_call = true;
  gateway_process strict(cfg.yaml());
  check_required_call_fails(strict.port(), "/api/sql?depth=1000", "value nested too deep");
  CHECK(strict.running());
}

TEST_CASE("postgres: a parameter holding a NUL byte fails the call instead of being cut short",
          "[sql][postgres]") {
  postgres_server pg;
  create_offers(pg);
  auto cfg = postgres_config(pg.dsn(), offer_query);
  cfg.pool_size = 1;
  cfg.permits = 1;
  gateway_process gw(cfg.yaml());

  // Sent as a C string, "A1\0B2" would be "A1" and find A1's row.
  for (const char* target : {"/api/sql?sku=A1%00B2", "/api/sql?sku=A1%00", "/api/sql?sku=%00"}) {
    auto res = timed_get(gw.port(), target);
    INFO(target << ": " << describe(res));
    CHECK(classify(res.response, a1_columns) == outcome::fell_back);
  }
  auto after = timed_get(gw.port(), "/api/sql?sku=A1");  // the only connection is still usable
  INFO("after: " << describe(after));
  CHECK(classify(after.response, a1_columns) == outcome::answered);

  cfg.required_call = true;
  gateway_process strict(cfg.yaml());
  check_required_call_fails(strict.port(), "/api/sql?sku=A1%00B2", "parameter contains NUL");
}

TEST_CASE("postgres: only the first row is read, the rest of a long result is cancelled on the server",
          "[sql][postgres]") {
  postgres_server pg;
  auto cfg = postgres_config(pg.dsn(), "SELECT g AS n FROM generate_series(1, CAST(:rows AS int)) g");
  cfg.params = {"rows"};
  cfg.pool_size = 1;
  cfg.permits = 1;
  cfg.deadline = "10s";
  gateway_process gw(cfg.yaml());
  pg_client db(pg.dsn());
  const json first = {{"n", 1}};

  // A short result comes whole in the reply to the first row: it is read to its end, nothing cancelled.
  auto few = timed_get(gw.port(), "/api/sql?rows=3");
  INFO("3 rows: " << describe(few));
  CHECK(classify(few.response, first) == outcome::answered);
  CHECK(gateway_metric(gw, "gateway_db_cancellations_total") == 0);

  // Two million rows (some 35 MB on the wire): the first one answers, and the query is cancelled on the
  // server rather than read to its end.
  auto many = timed_get(gw.port(), "/api/sql?rows=2000000");
  INFO("2000000 rows: " << describe(many));
  CHECK(classify(many.response, first) == outcome::answered);
  CHECK(many.latency < 3s);
  CHECK(gateway_metric(gw, "gateway_db_cancellations_total") == 1);
  CHECK(eventually(
      [&] {
        return db.value(
                   "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND "
                   "query LIKE '%generate_series%' AND application_name <> '" +
                   std::string(pg_client::application_name) + "'") == "0";
      },
      2s));
  const double rss = gateway_metric(gw, "process_resident_memory_bytes");
  INFO("gateway RSS " << rss / (1 << 20) << " MiB");
  CHECK(rss > 0);
  CHECK(rss < 256.0 * (1 << 20));

  // The pool's only connection comes back once the rest is drained (polled: the maintenance thread may be
  // slow to run on a loaded machine).
  timed_answer next;
  const bool answered = eventually(
      [&] {
        next = timed_get(gw.port(), "/api/sql?rows=2");
        return classify(next.response, first) == outcome::answered;
      },
      3s);
  INFO("next: " << describe(next));
  CHECK(answered);
}
