#include "tests/support/redis_server.hpp"

#include "tests/support/free_port.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace test_support {

namespace {

using namespace std::chrono_literals;

// Below Linux's ephemeral range (32768+): outgoing connections never take the port while the server is
// down between a kill and a restart.
constexpr int first_port = 15000;
constexpr int last_port = 30000;
constexpr int start_attempts = 8;
constexpr auto ready_timeout = 10s;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

redis_server::redis_server(redis_server_options options) : options_(std::move(options)) {
  if (options_.tls) certs_ = std::make_unique<tls_files>();
  std::string why;
  for (int attempt = 0; attempt < start_attempts; ++attempt) {
    port_ = random_free_port(first_port, last_port, "redis-server");
    if (try_start(why)) return;
    // Another process may have taken the port between the check and the server's bind: draw again.
    if (why.find("in use") == std::string::npos) break;
  }
  throw std::runtime_error("redis-server did not start: " + why);
}

redis_server::~redis_server() {
  kill();
}

void redis_server::kill() {
  if (!process_) return;
  process_->stop(SIGKILL, 5s);
  process_.reset();
}

void redis_server::stop() {
  if (!process_) return;
  process_->stop(SIGTERM, 10s);
  process_.reset();  // the destructor SIGKILLs it if it did not exit
}

void redis_server::start() {
  if (process_) return;
  std::string why;
  if (!try_start(why))
    throw std::runtime_error("redis-server did not restart on port " + std::to_string(port_) + ": " + why);
}

std::string redis_server::url() const {
  std::string u = options_.tls ? "rediss://" : "redis://";
  if (!options_.password.empty()) u += ":" + options_.password + "@";
  return u + "127.0.0.1:" + std::to_string(port_);
}

bool redis_server::try_start(std::string& why) {
  const auto log = dir_.file("redis.log");
  std::ofstream(log, std::ios::trunc).flush();
  std::vector<std::string> argv = {"/usr/bin/redis-server",
                                   "--bind",
                                   "127.0.0.1",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--daemonize",
                                   "no",
                                   "--dir",
                                   dir_.path(),
                                   "--logfile",
                                   log};
  const auto port = std::to_string(port_);
  if (certs_) {
    for (const auto& a : {"--port", "0", "--tls-port", port.c_str(), "--tls-auth-clients", "no"})
      argv.emplace_back(a);
    for (const auto& a : {std::string("--tls-cert-file"), certs_->server_cert, std::string("--tls-key-file"),
                          certs_->server_key, std::string("--tls-ca-cert-file"), certs_->ca_cert})
      argv.push_back(a);
  } else {
    argv.insert(argv.end(), {"--port", port});
  }
  if (!options_.password.empty()) argv.insert(argv.end(), {"--requirepass", options_.password});
  process_ = std::make_unique<child_process>(argv, dir_.file("redis.stderr"));
  const auto give_up = std::chrono::steady_clock::now() + ready_timeout;
  for (;;) {
    if (!process_->running()) {
      why = "redis-server exited: " + process_->stderr_text() + read_file(log);
      process_.reset();
      return false;
    }
    if (ping() == "PONG") return true;
    if (std::chrono::steady_clock::now() >= give_up) {
      why = "no answer to PING within 10 s: " + read_file(log);
      kill();
      return false;
    }
    std::this_thread::sleep_for(10ms);
  }
}

std::vector<std::string> redis_server::cli_argv(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"/usr/bin/redis-cli", "-h", "127.0.0.1", "-p", std::to_string(port_)};
  if (certs_) argv.insert(argv.end(), {"--tls", "--cacert", certs_->ca_cert});
  if (!options_.password.empty()) argv.insert(argv.end(), {"-a", options_.password, "--no-auth-warning"});
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::optional<std::string> redis_server::ping() const {
  const auto r = run_command(cli_argv({"PING"}), 2s);
  if (!r.status.exited || r.status.code != 0) return std::nullopt;
  return trimmed(r.out);
}

std::string redis_server::cli(const std::vector<std::string>& args) const {
  const auto r = run_command(cli_argv(args), 10s);
  if (!r.status.exited || r.status.code != 0) throw std::runtime_error("redis-cli failed: " + r.out + r.err);
  return trimmed(r.out);
}

}  // namespace test_support
