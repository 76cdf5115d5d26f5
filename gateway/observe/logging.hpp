#pragma once
// Logging that never blocks an I/O thread: the access log (one line per request on stdout) and the
// diagnostic log (stderr) both go through asynchronous spdlog loggers. The caller only formats the line
// and enqueues it; when the queue is full the oldest line is dropped. The writer thread never waits long
// either: an output that stays unwritable (a full pipe, a stuck terminal) or fails (a full disk, a closed
// pipe) costs dropped lines, counted, never a stalled or stopped gateway.

#include "gateway/config/config.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace spdlog {
class logger;
namespace details {
class thread_pool;
}
}  // namespace spdlog

namespace gateway {

class fd_sink;

struct access_entry {
  std::chrono::system_clock::time_point time;
  std::string_view request_id;
  std::string_view method;
  std::string_view route;  // the route's path, or "unmatched"
  unsigned status = 0;
  double duration_ms = 0;
  std::string_view degraded;  // call names, comma-separated
  std::size_t bytes = 0;      // response body
  std::string_view client;    // address:port
};

class access_log {
 public:
  // `fd` is where lines go (stdout by default).
  access_log(log_format format, int fd = 1);
  ~access_log();
  access_log(const access_log&) = delete;
  access_log& operator=(const access_log&) = delete;

  void write(const access_entry& entry);
  std::uint64_t dropped() const;

 private:
  log_format format_;
  std::shared_ptr<fd_sink> sink_;
  std::shared_ptr<spdlog::details::thread_pool> pool_;  // outlives the logger: drains its queue on exit
  std::shared_ptr<spdlog::logger> logger_;
};

// Installs the diagnostic logger (stderr, asynchronous, `format` json or text) as spdlog's default.
void setup_diagnostic_log(log_format format, const std::string& level);

// The line without its newline (exposed for tests).
std::string format_access_line(const access_entry& entry, log_format format);

}  // namespace gateway
