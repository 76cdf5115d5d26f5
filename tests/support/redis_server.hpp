#pragma once
// A throwaway redis-server for tests: on 127.0.0.1 and a free port below the ephemeral range
// (redis cannot be told port 0), no persistence, its log and files in a private temporary directory. It
// can be killed (SIGKILL, a crash) or stopped (SIGTERM) and started again on the same port; it is killed
// on destruction. Optionally with a password (requirepass) and/or TLS only (a CA and a server certificate
// for 127.0.0.1 and localhost made with the openssl command, tests/support/tls_files.hpp; clients are not
// asked for certificates). Readiness is a PING answered by redis-cli, polled with a bound. Failures throw
// std::runtime_error with the server's log.

#include "tests/support/child_process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tls_files.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace test_support {

struct redis_server_options {
  std::string password;  // requirepass; empty: none
  bool tls = false;      // TLS on the port, no plain TCP port
};

class redis_server {
 public:
  redis_server() : redis_server(redis_server_options()) {}
  explicit redis_server(redis_server_options options);
  redis_server(const redis_server&) = delete;
  redis_server& operator=(const redis_server&) = delete;
  ~redis_server();

  // SIGKILL: connections are reset, nothing is said to the clients. No-op when not running.
  void kill();
  // SIGTERM and a wait for the exit. No-op when not running.
  void stop();
  // Starts again on the same port and waits for PING. No-op when running.
  void start();
  bool running() const { return process_ != nullptr; }

  std::uint16_t port() const { return port_; }
  // redis://[:password@]127.0.0.1:PORT, or rediss://... with TLS.
  std::string url() const;
  // The CA that signed the server's certificate (TLS only; empty otherwise).
  std::string ca_file() const { return certs_ ? certs_->ca_cert : std::string(); }

  // Runs redis-cli with `args` against the server (password and TLS options added); its stdout, trimmed.
  // Throws when redis-cli fails to run or exits with an error.
  std::string cli(const std::vector<std::string>& args) const;

 private:
  // Starts redis-server on port_ and waits for PING; false with `why` when it exited or never answered.
  bool try_start(std::string& why);
  std::optional<std::string> ping() const;
  std::vector<std::string> cli_argv(const std::vector<std::string>& args) const;

  redis_server_options options_;
  temp_dir dir_;
  std::unique_ptr<tls_files> certs_;
  std::uint16_t port_ = 0;
  std::unique_ptr<child_process> process_;
};

}  // namespace test_support
