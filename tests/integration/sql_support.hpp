#pragma once
// Shared by the SQL downstream tests: a config with one route GET /api/sql calling one SQL downstream,
// classification of its answers (the real entry, the fallback, or wrong), timed and concurrent requests,
// bounded polling, and the offers table as an SQLite file. Assertions use Catch2; setup errors throw.

#include "tests/support/offer_checks.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace test_support::sql {

inline const std::string call_name = "inventory";
// An answer cut by the deadline arrives within this after it.
inline constexpr milliseconds answer_slack{300};

// Answers {"priceCent", "stock"} for :sku from the offers table, in both drivers' dialects.
inline const std::string offer_query =
    R"(SELECT price_cent AS "priceCent", stock FROM offers WHERE sku = :sku)";

// ---- Configuration

// One route, GET /api/sql, with one call "inventory" to one SQL downstream "db"; every param is required.
struct sql_config {
  std::string driver = "postgres";
  std::string dsn;         // postgres only
  std::string database;    // sqlite only
  bool read_only = false;  // sqlite only
  std::string query;
  unsigned pool_size = 8;
  unsigned permits = 4;
  unsigned max_waiting = 1000;
  std::string deadline = "800ms";
  std::vector<std::string> params = {"sku"};
  // The call is required: a failure answers 502 with the call's detail instead of the fallback.
  bool required_call = false;

  std::string yaml() const;
};

sql_config postgres_config(const std::string& dsn, std::string query);
sql_config sqlite_config(const std::string& database, std::string query);

// ---- Answers

enum class outcome { answered, fell_back, wrong };

// One answer of the route: `answered` is a 200 whose entry holds `columns` (other columns may come too)
// with source "inventory", degraded false and no X-Degraded; `fell_back` is a 200 with exactly the
// fallback entry and X-Degraded: inventory; anything else is `wrong`.
outcome classify(const http_response& res, const nlohmann::json& columns);

struct timed_answer {
  http_response response;  // status 0 when the request failed
  std::string error;       // why it failed
  milliseconds latency{};  // from sending the request to having the whole answer
};

std::string describe(const timed_answer& a);

// GET `target` on `conn`; a failed request is reported in the answer's `error`, not thrown.
timed_answer exchange(http_connection& conn, const std::string& target, milliseconds timeout);
timed_answer timed_get(std::uint16_t port, const std::string& target,
                       milliseconds timeout = std::chrono::seconds(10));

// Sends GET targets[i] each on its own connection, all at once: the connections are opened first and the
// threads send together once all are ready. Returns the answers in target order.
std::vector<timed_answer> get_concurrently(std::uint16_t port, const std::vector<std::string>& targets,
                                           milliseconds timeout);

struct tally {
  std::vector<outcome> outcomes;  // per answer
  int answered = 0;
  int fell_back = 0;
  int wrong = 0;
  milliseconds slowest{};
  std::string report;  // one line per answer, for failure messages
};

tally classify_all(const std::vector<timed_answer>& answers, const nlohmann::json& columns);

// An unknown sku, and one that would match every row if it were spliced into the SQL text rather than
// bound, find no row: the call falls back.
void check_no_row_falls_back(std::uint16_t port);

// Polls `done` every 20 ms until it holds or `timeout` passes; returns whether it held.
bool eventually(const std::function<bool()>& done, milliseconds timeout);

// ---- SQLite files

// Runs `sql` on the database file `path`, creating it if needed; throws on error.
void sqlite_exec(const std::string& path, const std::string& sql);

// offers.db in `dir` with the offers table (A1, B2, C3); returns its path.
std::string create_offers_file(const temp_dir& dir);

}  // namespace test_support::sql
