#include "tests/integration/sql_support.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <exception>
#include <latch>
#include <memory>
#include <stdexcept>
#include <thread>

using namespace std::chrono_literals;
using nlohmann::json;

namespace test_support::sql {

namespace {

// A YAML single-quoted scalar.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

}  // namespace

// ---- Configuration

std::string sql_config::yaml() const {
  std::string y = "server:\n  listen: 127.0.0.1:0\n  threads: 2\n";
  y += "downstreams:\n  db:\n    kind: sql\n";
  y += "    driver: " + driver + "\n";
  if (!dsn.empty()) y += "    dsn: " + quoted(dsn) + "\n";
  if (!database.empty()) y += "    database: " + quoted(database) + "\n";
  if (read_only) y += "    read_only: true\n";
  y += "    pool_size: " + std::to_string(pool_size) + "\n";
  y += "    permits: " + std::to_string(permits) + "\n";
  y += "    max_waiting: " + std::to_string(max_waiting) + "\n";
  y += "    connect_timeout: 1s\n";
  y += "    query: " + quoted(query) + "\n";
  y += "routes:\n  - path: /api/sql\n";
  y += "    deadline: " + deadline + "\n";
  y += "    params:\n";
  for (const auto& p : params) y += "      " + p + ": {required: true}\n";
  y += "    calls:\n      - name: " + call_name + "\n        downstream: db\n";
  if (required_call) y += "        required: true\n";
  y += "        fallback: {priceCent: " + std::to_string(fallback_price) +
       ", stock: " + std::to_string(fallback_stock) + "}\n";
  return y;
}

sql_config postgres_config(const std::string& dsn, std::string query) {
  sql_config cfg;
  cfg.dsn = dsn;
  cfg.query = std::move(query);
  return cfg;
}

sql_config sqlite_config(const std::string& database, std::string query) {
  sql_config cfg;
  cfg.driver = "sqlite";
  cfg.database = database;
  cfg.query = std::move(query);
  return cfg;
}

// ---- Answers

outcome classify(const http_response& res, const json& columns) {
  if (res.status != 200) return outcome::wrong;
  json body = json::parse(res.body, nullptr, false);
  if (!body.is_array() || body.size() != 1 || !body[0].is_object()) return outcome::wrong;
  const json& entry = body[0];
  json fallback = {
      {"priceCent", fallback_price}, {"stock", fallback_stock}, {"source", call_name}, {"degraded", true}};
  if (entry == fallback) return res.degraded_calls() == call_name ? outcome::fell_back : outcome::wrong;
  if (res.has_header("x-degraded") || entry.value("source", json()) != json(call_name) ||
      entry.value("degraded", json()) != json(false))
    return outcome::wrong;
  for (const auto& [key, value] : columns.items())
    if (!entry.contains(key) || entry[key] != value) return outcome::wrong;
  return outcome::answered;
}

std::string describe(const timed_answer& a) {
  std::string text = std::to_string(a.latency.count()) + " ms: ";
  if (!a.error.empty()) return text + "failed: " + a.error;
  return text + std::to_string(a.response.status) +
         " X-Degraded=" + a.response.header("x-degraded").value_or("-") + " " +
         a.response.body.substr(0, 200);
}

timed_answer exchange(http_connection& conn, const std::string& target, milliseconds timeout) {
  timed_answer a;
  auto start = steady_clock::now();
  try {
    a.response = conn.get(target, {}, timeout);
  } catch (const std::exception& e) {
    a.error = e.what();
  }
  a.latency = elapsed_since(start);
  return a;
}

timed_answer timed_get(std::uint16_t port, const std::string& target, milliseconds timeout) {
  http_connection conn(port);
  return exchange(conn, target, timeout);
}

std::vector<timed_answer> get_concurrently(std::uint16_t port, const std::vector<std::string>& targets,
                                           milliseconds timeout) {
  std::vector<http_connection> conns;
  for (std::size_t i = 0; i < targets.size(); ++i) conns.emplace_back(port);
  std::vector<timed_answer> answers(targets.size());
  std::latch ready(static_cast<std::ptrdiff_t>(targets.size()));
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    threads.emplace_back([&, i] {
      ready.arrive_and_wait();
      answers[i] = exchange(conns[i], targets[i], timeout);
    });
  }
  for (auto& t : threads) t.join();
  return answers;
}

tally classify_all(const std::vector<timed_answer>& answers, const json& columns) {
  tally t;
  for (const auto& a : answers) {
    auto o = classify(a.response, columns);
    t.outcomes.push_back(o);
    (o == outcome::answered ? t.answered : o == outcome::fell_back ? t.fell_back : t.wrong)++;
    t.slowest = std::max(t.slowest, a.latency);
    t.report += describe(a) + "\n";
  }
  return t;
}

void check_no_row_falls_back(std::uint16_t port) {
  for (const char* target : {"/api/sql?sku=Z9", "/api/sql?sku=A1%27%20OR%20%271%27%3D%271"}) {
    auto res = http_get(port, target);
    INFO(target << ": " << res.body);
    REQUIRE(res.status == 200);
    CHECK(res.degraded_calls() == call_name);
    REQUIRE(res.json().size() == 1);
    check_fallback_entry(res.json()[0], call_name);
  }
}

bool eventually(const std::function<bool()>& done, milliseconds timeout) {
  auto give_up = steady_clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (steady_clock::now() >= give_up) return false;
    std::this_thread::sleep_for(20ms);
  }
}

// ---- SQLite files

void sqlite_exec(const std::string& path, const std::string& sql) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db(raw, &sqlite3_close);
  char* err = nullptr;
  if (rc == SQLITE_OK) rc = sqlite3_exec(db.get(), sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string message = err != nullptr ? err : sqlite3_errmsg(db.get());
    sqlite3_free(err);
    throw std::runtime_error("sqlite " + path + ": " + message);
  }
}

std::string create_offers_file(const temp_dir& dir) {
  auto path = dir.file("offers.db");
  sqlite_exec(path,
              "CREATE TABLE offers (sku TEXT PRIMARY KEY, price_cent INTEGER, stock INTEGER);"
              "INSERT INTO offers VALUES ('A1', 1999, 7), ('B2', 500, 0), ('C3', 12, NULL)");
  return path;
}

}  // namespace test_support::sql
