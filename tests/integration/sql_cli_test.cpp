// gateway --check on SQL downstreams: it accepts the configs the SQL tests generate and rejects
// inconsistent ones at their line.

#include "tests/integration/sql_support.hpp"
#include "tests/support/text_edit.hpp"

#include <algorithm>
#include <string>
#include <vector>

using namespace test_support;
using namespace test_support::sql;
using namespace std::chrono_literals;

namespace {

const std::string unreachable_dsn = "host=127.0.0.1 port=9 dbname=postgres user=postgres";

// `gateway --check` on `yaml` exits 2, reports FILE:LINE: at a line holding one of `near`, and mentions
// `word`.
void check_rejected(const std::string& yaml, const std::vector<std::string>& near, const std::string& word) {
  temp_dir dir;
  auto file = dir.write("sql.yaml", yaml);
  auto result = run_command({GATEWAY_BIN, "--check", file}, 10s);
  INFO("config:\n" << yaml << "\nstderr: " << result.err);
  CHECK(result.status.exited);
  CHECK(result.status.code == 2);
  CHECK(std::any_of(near.begin(), near.end(), [&](const std::string& needle) {
    int line = line_of(yaml, needle);
    return line > 0 && result.err.find(file + ":" + std::to_string(line) + ":") != std::string::npos;
  }));
  CHECK(result.err.find(word) != std::string::npos);
}

}  // namespace

TEST_CASE("gateway --check accepts the SQL configs these tests generate", "[sql][cli]") {
  temp_dir dir;
  auto database = create_offers_file(dir);
  for (const auto& cfg :
       {postgres_config(unreachable_dsn, offer_query), sqlite_config(database, offer_query)}) {
    auto file = dir.write("ok.yaml", cfg.yaml());
    auto result = run_command({GATEWAY_BIN, "--check", file}, 10s);
    INFO("config:\n" << cfg.yaml() << "\nstderr: " << result.err);
    CHECK(result.status.exited);
    CHECK(result.status.code == 0);
  }
}

TEST_CASE("gateway --check rejects inconsistent SQL configs at their line", "[sql][cli]") {
  auto cfg = postgres_config(unreachable_dsn, offer_query);
  SECTION("a sql downstream without a driver") {
    check_rejected(replace_once(cfg.yaml(), "    driver: postgres\n", ""), {"  db:", "kind: sql"}, "driver");
  }
  SECTION("read_only on a postgres downstream") {
    check_rejected(
        replace_once(cfg.yaml(), "    driver: postgres\n", "    driver: postgres\n    read_only: true\n"),
        {"read_only: true"}, "read_only");
  }
  SECTION("more permits than connections") {
    cfg.permits = 9;
    check_rejected(cfg.yaml(), {"permits: 9", "pool_size: 8"}, "permits");
  }
  SECTION("a query naming a parameter the route does not declare") {
    cfg.query += " AND stock > :nope";
    check_rejected(cfg.yaml(), {"query:", "- name: inventory", "downstream: db"}, "nope");
  }
  SECTION("a sql call with a path") {
    check_rejected(replace_once(cfg.yaml(), "        downstream: db\n",
                                "        downstream: db\n        path: /offers?sku={sku}\n"),
                   {"path: /offers"}, "path");
  }
}

TEST_CASE("gateway --check refuses a sqlite database that is missing or not a file, read_only or not",
          "[sql][cli]") {
  temp_dir dir;
  const auto database = create_offers_file(dir);
  for (const bool read_only : {true, false}) {
    INFO("read_only: " << read_only);
    for (const auto& [path, why] :
         {std::pair(dir.file("missing.db"), std::string("No such file or directory")),
          std::pair(dir.path(), std::string("is a directory"))}) {
      auto cfg = sqlite_config(path, offer_query);
      cfg.read_only = read_only;
      check_rejected(cfg.yaml(), {"database:"},
                     "downstream 'db'.database: cannot open '" + path + "': " + why);
    }
    auto cfg = sqlite_config(database, offer_query);
    cfg.read_only = read_only;
    auto file = dir.write("ok.yaml", cfg.yaml());
    auto result = run_command({GATEWAY_BIN, "--check", file}, 10s);
    INFO("stderr: " << result.err);
    CHECK(result.status.code == 0);
  }
}

TEST_CASE("gateway --check takes a relative sqlite database path from its working directory", "[sql][cli]") {
  temp_dir dir;
  create_offers_file(dir);
  auto file = dir.write("relative.yaml", sqlite_config("offers.db", offer_query).yaml());
  // From the directory holding it: found. From elsewhere: refused, naming that directory.
  auto found =
      run_command({"/bin/sh", "-c", "cd '" + dir.path() + "' && exec " GATEWAY_BIN " --check " + file}, 10s);
  INFO("stderr: " << found.err);
  CHECK(found.status.code == 0);
  auto elsewhere = run_command({"/bin/sh", "-c", "cd / && exec " GATEWAY_BIN " --check " + file}, 10s);
  INFO("stderr: " << elsewhere.err);
  CHECK(elsewhere.status.code == 2);
  CHECK(elsewhere.err.find("'offers.db' (from the working directory /): No such file or directory") !=
        std::string::npos);
}
