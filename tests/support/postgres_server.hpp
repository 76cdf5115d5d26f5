#pragma once
// A throwaway PostgreSQL cluster for integration tests: initdb into a private temporary directory, a server
// on 127.0.0.1 with trust authentication (user and database "postgres"), stopped and removed on
// destruction. As root the server runs as the system user "postgres" (PostgreSQL refuses to run as root).
// Every step is bounded by a timeout; failures throw std::runtime_error with the tool's output.
//
// pg_client is a minimal blocking libpq client for preparing tables and looking at pg_stat_activity.

#include "tests/support/child_process.hpp"
#include "tests/support/temp_dir.hpp"

#include <cstdint>
#include <string>
#include <vector>

struct pg_conn;

namespace test_support {

class postgres_server {
 public:
  // Creates the cluster and starts it on a free port below the ephemeral range. Throws if the server
  // binaries are not installed.
  postgres_server();
  postgres_server(const postgres_server&) = delete;
  postgres_server& operator=(const postgres_server&) = delete;
  ~postgres_server();

  // Fast shutdown: open sessions are terminated. No-op when already stopped.
  void stop();
  // Starts the stopped cluster again on the same port. No-op when running.
  void start();
  bool running() const { return running_; }

  std::uint16_t port() const { return port_; }
  // "host=127.0.0.1 port=N dbname=postgres user=postgres"
  std::string dsn() const;

 private:
  // Runs a server binary (as user "postgres" when we are root) with a bound.
  command_result run_tool(const std::string& tool, std::vector<std::string> args);
  // pg_ctl start on port_; returns false (with the reason in `why`) if the server did not come up.
  bool try_start(std::string& why);

  temp_dir dir_;
  std::string bin_dir_;
  std::string data_dir_;
  std::string log_file_;
  bool as_postgres_user_ = false;
  std::uint16_t port_ = 0;
  bool running_ = false;
};

class pg_client {
 public:
  // The application_name of every pg_client session, to tell them from the gateway's in pg_stat_activity.
  static constexpr const char* application_name = "test_support";

  // Connects within 5 s; throws std::runtime_error on failure.
  explicit pg_client(const std::string& dsn);
  pg_client(const pg_client&) = delete;
  pg_client& operator=(const pg_client&) = delete;
  ~pg_client();

  // Runs one or more statements; returns the rows of the last one as text (NULL as ""). Throws
  // std::runtime_error with the server's message on error.
  std::vector<std::vector<std::string>> exec(const std::string& sql);
  // The first column of the first row of `sql`'s result; throws if there is none.
  std::string value(const std::string& sql);

 private:
  pg_conn* conn_ = nullptr;
};

}  // namespace test_support
