// SQL downstream on SQLite (embedded): a call's entry is the first row as a JSON object; queries beyond
// `permits` wait for a permit; a deadline interrupts a running query and frees its connection.

#include "tests/integration/sql_support.hpp"
#include "tests/support/prometheus_text.hpp"

#include <sqlite3.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace test_support;
using namespace test_support::sql;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

// Counts to :n: CPU work in proportion to n on one thread, touching no table.
const std::string counting_query =
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < CAST(:n AS INTEGER)) "
    "SELECT count(*) AS n FROM c";

std::chrono::microseconds thread_cpu_time() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::microseconds(ts.tv_nsec / 1000);
}

// The CPU time counting_query takes for `n` here: the least of three runs.
std::chrono::microseconds counting_cpu_time(long long n) {
  sqlite3* raw_db = nullptr;
  sqlite3_open(":memory:", &raw_db);
  std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db(raw_db, &sqlite3_close);
  sqlite3_stmt* raw_stmt = nullptr;
  if (sqlite3_prepare_v2(db.get(), counting_query.c_str(), -1, &raw_stmt, nullptr) != SQLITE_OK)
    throw std::runtime_error(std::string("sqlite prepare: ") + sqlite3_errmsg(db.get()));
  std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> stmt(raw_stmt, &sqlite3_finalize);
  std::string text = std::to_string(n);
  auto best = std::chrono::microseconds::max();
  for (int run = 0; run < 3; ++run) {
    sqlite3_reset(stmt.get());
    sqlite3_bind_text(stmt.get(), 1, text.c_str(), -1, SQLITE_TRANSIENT);
    auto start = thread_cpu_time();
    while (sqlite3_step(stmt.get()) == SQLITE_ROW) {
    }
    best = std::min(best, thread_cpu_time() - start);
  }
  return best;
}

// counting_query on an empty database file in `dir`, with the route param n.
sql_config counting_config(const temp_dir& dir) {
  auto path = dir.file("count.db");
  sqlite_exec(path, "CREATE TABLE unused (x INTEGER)");
  auto cfg = sqlite_config(path, counting_query);
  cfg.params = {"n"};
  return cfg;
}

struct calibration {
  long long n = 0;
  std::chrono::microseconds cpu{};  // counting_cpu_time(n)
};

// An n for which counting_query takes about `target` of CPU time on this machine, measured.
calibration calibrate_counting(milliseconds target) {
  calibration c{100'000, counting_cpu_time(100'000)};
  for (int i = 0; i < 4 && (c.cpu < target * 8 / 10 || c.cpu > target * 12 / 10); ++i) {
    double scale = std::chrono::duration<double>(target) / std::max(c.cpu, std::chrono::microseconds(1000));
    c.n = std::max(1000LL, static_cast<long long>(static_cast<double>(c.n) * scale));
    c.cpu = counting_cpu_time(c.n);
  }
  return c;
}

}  // namespace

TEST_CASE("sqlite: the first row becomes the call's entry and no row falls back", "[sql][sqlite]") {
  temp_dir dir;
  auto cfg = sqlite_config(create_offers_file(dir),
                           "SELECT price_cent AS priceCent, stock, sku AS name FROM offers WHERE sku = :sku");
  cfg.pool_size = 2;
  cfg.permits = 2;
  gateway_process gw(cfg.yaml());

  auto res = http_get(gw.port(), "/api/sql?sku=A1");
  INFO(res.body);
  REQUIRE(res.status == 200);
  CHECK_FALSE(res.has_header("x-degraded"));
  CHECK(res.json() == json::parse(R"([{"priceCent": 1999, "stock": 7, "name": "A1",
                                       "source": "inventory", "degraded": false}])"));

  res = http_get(gw.port(), "/api/sql?sku=C3");
  INFO(res.body);
  CHECK(res.json() == json::parse(R"([{"priceCent": 12, "stock": null, "name": "C3",
                                       "source": "inventory", "degraded": false}])"));

  check_no_row_falls_back(gw.port());
}

TEST_CASE("sqlite: queries beyond `permits` wait for a permit", "[sql][sqlite]") {
  // SQLite has no server to watch, so the gateway's own figures are sampled while eight slow queries
  // (about 200 ms of CPU each) meet 2 permits over a pool of 4: connections in use (taken only with a
  // permit) never exceed the permits, the others are seen queued, and every query is answered. The pool
  // is larger than the permits, so the semaphore, not the pool, is what holds them back.
  auto calibrated = calibrate_counting(200ms);
  temp_dir dir;
  auto cfg = counting_config(dir);
  cfg.pool_size = 4;
  cfg.permits = 2;
  cfg.deadline = "30s";
  gateway_process gw(cfg.yaml());

  constexpr int requests = 8;
  std::string target = "/api/sql?n=" + std::to_string(calibrated.n);
  std::atomic<bool> done{false};
  double most_in_use = 0, most_waiting = 0;
  int samples = 0;
  std::string problems;
  std::thread sampler([&] {
    while (!done) {
      const auto e = parse_exposition(http_get(gw.admin_port(), "/metrics").body);
      if (!e.problems.empty()) problems = text_of(e.problems);
      most_in_use = std::max(most_in_use, total(e, "gateway_db_pool_connections", {{"state", "in_use"}}));
      most_waiting = std::max(most_waiting, total(e, "gateway_db_semaphore_waiting"));
      ++samples;
      std::this_thread::sleep_for(5ms);
    }
  });
  auto answers = get_concurrently(gw.port(), std::vector<std::string>(requests, target), 40s);
  done = true;
  sampler.join();

  auto t = classify_all(answers, json{{"n", calibrated.n}});
  INFO(t.report << samples << " samples; most connections in use " << most_in_use << ", most waiting "
                << most_waiting << "\n"
                << problems);
  CHECK(problems.empty());
  CHECK(t.answered == requests);
  CHECK(samples >= 10);
  CHECK(most_in_use <= 2);
  CHECK(most_in_use >= 1);
  CHECK(most_waiting >= 1);  // the queries beyond the permits did queue
  const auto after = parse_exposition(http_get(gw.admin_port(), "/metrics").body);
  CHECK(total(after, "gateway_db_semaphore_permits_available") == 2);  // every permit came back
}

TEST_CASE("sqlite: the deadline interrupts a running query and frees its connection", "[sql][sqlite]") {
  auto calibrated = calibrate_counting(200ms);
  long long three_seconds = calibrated.n * 15;  // the work is linear in n
  temp_dir dir;
  auto cfg = counting_config(dir);
  cfg.pool_size = 1;
  cfg.permits = 1;
  cfg.deadline = "300ms";
  gateway_process gw(cfg.yaml());

  auto slow = timed_get(gw.port(), "/api/sql?n=" + std::to_string(three_seconds));
  INFO("slow (n " << three_seconds << "): " << describe(slow));
  CHECK(classify(slow.response, json::object()) == outcome::fell_back);
  CHECK(slow.latency <= 300ms + answer_slack);

  // Had the first query run on, this one would wait for the only permit and fall back at the deadline.
  auto quick = timed_get(gw.port(), "/api/sql?n=1000");
  INFO("quick: " << describe(quick));
  CHECK(classify(quick.response, json{{"n", 1000}}) == outcome::answered);
  CHECK(quick.latency < 1s);
}

TEST_CASE("sqlite: a read_only database is opened immutable and nothing is written beside it",
          "[sql][sqlite]") {
  temp_dir dir;
  // URI metacharacters in the name: the file must still be the one opened.
  const auto path = dir.file("offers 100% #1?.db");
  std::filesystem::rename(create_offers_file(dir), path);
  auto cfg = sqlite_config(path, offer_query);
  cfg.read_only = true;
  {
    gateway_process gw(cfg.yaml());
    auto res = http_get(gw.port(), "/api/sql?sku=A1");
    INFO(res.body);
    CHECK(classify(res, {{"priceCent", 1999}, {"stock", 7}}) == outcome::answered);
    check_no_row_falls_back(gw.port());
    check_clean_exit(gw);
  }
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    names.push_back(entry.path().filename().string());
  CHECK(names == std::vector<std::string>{"offers 100% #1?.db"});  // no -wal, -shm or -journal
}

TEST_CASE("sqlite: a read_only database that does not exist stops the start", "[sql][sqlite]") {
  temp_dir dir;
  auto cfg = sqlite_config(dir.file("missing.db"), offer_query);
  cfg.read_only = true;
  auto file = dir.write("missing.yaml", cfg.yaml());
  auto result = run_command({GATEWAY_BIN, "--config", file}, 10s);
  INFO("stdout: " << result.out << "\nstderr: " << result.err);
  CHECK(result.status.exited);
  CHECK(result.status.code != 0);
  CHECK(result.err.find("cannot open database") != std::string::npos);
  CHECK(result.out.find("listening on") == std::string::npos);
}
