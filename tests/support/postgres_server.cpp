#include "tests/support/postgres_server.hpp"

#include "tests/support/free_port.hpp"

#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace test_support {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// Ports are drawn from here: below Linux's ephemeral range (32768+), so outgoing connections of parallel
// tests never occupy them, and wide enough that parallel clusters rarely draw the same one.
constexpr int first_port = 15000;
constexpr int last_port = 30000;
constexpr int start_attempts = 8;
constexpr auto tool_timeout = 60s;

// The newest /usr/lib/postgresql/VERSION/bin holding initdb and pg_ctl.
std::string find_bin_dir() {
  std::string best;
  double best_version = -1;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    std::string bin = entry.path().string() + "/bin";
    if (!fs::exists(bin + "/initdb", ec) || !fs::exists(bin + "/pg_ctl", ec)) continue;
    double version = std::strtod(entry.path().filename().c_str(), nullptr);
    if (version > best_version) {
      best_version = version;
      best = bin;
    }
  }
  if (best.empty())
    throw std::runtime_error(
        "PostgreSQL server binaries not found in /usr/lib/postgresql/*/bin; install the Debian package "
        "postgresql");
  return best;
}

std::string find_runuser() {
  for (const char* path : {"/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"})
    if (::access(path, X_OK) == 0) return path;
  throw std::runtime_error("running as root but runuser(1) not found; it is needed to start PostgreSQL");
}

std::string read_file(const std::string& path, std::streamoff from = 0) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(from);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::streamoff file_size(const std::string& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  return ec ? 0 : static_cast<std::streamoff>(size);
}

bool succeeded(const command_result& r) {
  return r.status.exited && r.status.code == 0;
}

std::string describe(const std::string& what, const command_result& r) {
  return what + (r.status.exited ? " exited " : " killed by signal ") + std::to_string(r.status.code) +
         "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

}  // namespace

postgres_server::postgres_server() : bin_dir_(find_bin_dir()) {
  data_dir_ = dir_.file("data");
  log_file_ = dir_.file("server.log");
  as_postgres_user_ = ::geteuid() == 0;
  if (as_postgres_user_) {
    const passwd* user = ::getpwnam("postgres");
    if (user == nullptr) throw std::runtime_error("running as root but there is no user 'postgres'");
    if (::chown(dir_.path().c_str(), user->pw_uid, user->pw_gid) != 0)
      throw std::runtime_error("chown " + dir_.path() + ": " + std::strerror(errno));
  }

  auto init = run_tool(
      "initdb", {"-A", "trust", "--no-sync", "-U", "postgres", "-E", "UTF8", "--locale=C", "-D", data_dir_});
  if (!succeeded(init)) {
    throw std::runtime_error(
        describe("initdb", init) +
        (as_postgres_user_
             ? "\n(the cluster runs as user postgres, which needs access to " + dir_.path() + ")"
             : ""));
  }

  std::string why;
  for (int attempt = 0; attempt < start_attempts; ++attempt) {
    port_ = random_free_port(first_port, last_port, "PostgreSQL");
    if (try_start(why)) return;
    // Another process may have taken the port between the check and the server's bind; draw again.
    if (why.find("could not bind") == std::string::npos && why.find("already in use") == std::string::npos)
      break;
  }
  throw std::runtime_error("PostgreSQL did not start: " + why);
}

postgres_server::~postgres_server() {
  if (!running_) return;
  try {
    stop();
  } catch (const std::exception&) {
    // pg_ctl failed: end the postmaster directly (immediate shutdown) before its directory goes away.
    std::ifstream pid_file(data_dir_ + "/postmaster.pid");
    long pid = 0;
    if (pid_file >> pid && pid > 0) {
      ::kill(static_cast<pid_t>(pid), SIGQUIT);
      for (int i = 0; i < 100 && ::kill(static_cast<pid_t>(pid), 0) == 0; ++i)
        std::this_thread::sleep_for(20ms);
    }
  }
}

std::string postgres_server::dsn() const {
  return "host=127.0.0.1 port=" + std::to_string(port_) + " dbname=postgres user=postgres";
}

command_result postgres_server::run_tool(const std::string& tool, std::vector<std::string> args) {
  std::vector<std::string> argv;
  if (as_postgres_user_) argv = {find_runuser(), "-u", "postgres", "--"};
  argv.push_back(bin_dir_ + "/" + tool);
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(std::move(argv), tool_timeout);
}

bool postgres_server::try_start(std::string& why) {
  auto log_offset = file_size(log_file_);
  std::string options = "-p " + std::to_string(port_) + " -k " + dir_.path() +
                        " -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300";
  auto r = run_tool("pg_ctl", {"-w", "-t", "30", "-D", data_dir_, "-l", log_file_, "-o", options, "start"});
  running_ = succeeded(r);
  if (!running_) why = describe("pg_ctl start", r) + "\nserver log:\n" + read_file(log_file_, log_offset);
  return running_;
}

void postgres_server::start() {
  if (running_) return;
  std::string why;
  if (!try_start(why))
    throw std::runtime_error("PostgreSQL did not restart on port " + std::to_string(port_) + ": " + why);
}

void postgres_server::stop() {
  if (!running_) return;
  auto r = run_tool("pg_ctl", {"-w", "-t", "30", "-D", data_dir_, "-m", "fast", "stop"});
  if (!succeeded(r)) throw std::runtime_error(describe("pg_ctl stop", r));
  running_ = false;
}

pg_client::pg_client(const std::string& dsn) {
  conn_ = PQconnectdb((dsn + " connect_timeout=5 application_name=" + application_name).c_str());
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string message = PQerrorMessage(conn_);
    PQfinish(conn_);
    throw std::runtime_error("cannot connect to PostgreSQL (" + dsn + "): " + message);
  }
  exec("SET statement_timeout = '10s'");  // a test's own statements never hang it
}

pg_client::~pg_client() {
  PQfinish(conn_);
}

std::vector<std::vector<std::string>> pg_client::exec(const std::string& sql) {
  std::unique_ptr<PGresult, decltype(&PQclear)> result(PQexec(conn_, sql.c_str()), &PQclear);
  auto status = PQresultStatus(result.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    throw std::runtime_error("PostgreSQL: " + std::string(PQerrorMessage(conn_)) + " in: " + sql);
  }
  std::vector<std::vector<std::string>> rows(static_cast<std::size_t>(PQntuples(result.get())));
  for (int r = 0; r < PQntuples(result.get()); ++r) {
    for (int c = 0; c < PQnfields(result.get()); ++c)
      rows[static_cast<std::size_t>(r)].emplace_back(PQgetvalue(result.get(), r, c));
  }
  return rows;
}

std::string pg_client::value(const std::string& sql) {
  auto rows = exec(sql);
  if (rows.empty() || rows.front().empty()) throw std::runtime_error("PostgreSQL: no value from: " + sql);
  return rows.front().front();
}

}  // namespace test_support
