#pragma once
// Logging that never blocks an I/O thread.
//
// The access log (one line per request on stdout) is batched: each I/O thread formats its lines into its
// own buffer (a mutex per thread, taken by that thread per line and by the writer thread per flush), and
// one writer thread takes every buffer whole every `flush_interval` (50 ms), or sooner when one holds 64
// KiB, and writes it with one write(). So a request costs its line's formatting and an uncontended lock,
// never a wake-up of another thread or a system call. A buffer holds at most 2 MiB: lines beyond that
// are dropped and counted.
//
// The diagnostic log (stderr) goes through an asynchronous spdlog logger; when its queue is full the
// oldest line is dropped.
//
// Neither writer waits long: an output that stays unwritable (a full pipe, a stuck terminal) or fails (a
// full disk, a closed pipe) costs dropped lines, counted, never a stalled or stopped gateway.

#include "gateway/config/config.hpp"
#include "gateway/downstream/call_result.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

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
  std::string_view route;   // the route's path, or "unmatched"
  std::string_view target;  // as the client sent it; logged with secret query values redacted
  unsigned status = 0;
  double duration_ms = 0;
  std::string_view degraded;    // call names, comma-separated
  std::size_t bytes = 0;        // response body
  std::string_view client;      // address:port of the peer, or the address X-Forwarded-For gave ...
  std::string_view proxy;       // ... when the peer is a trusted proxy: then its address:port, else empty
  std::string_view user_agent;  // may be empty
  std::string_view trace_id;    // 32 hex digits, or empty
  // The route's calls, in its order, with their names (null for none).
  std::span<const call_brief> calls;
  const aggregate_route* calls_of = nullptr;
};

// Formats the seconds of a time once per second (per writer of lines).
struct time_stamp_cache {
  std::int64_t second = -1;
  char text[20] = {};  // "YYYY-MM-DDTHH:MM:SS"
};

class access_log {
 public:
  static constexpr auto default_flush_interval = std::chrono::milliseconds(50);
  static constexpr std::size_t flush_bytes = 64 * 1024;        // a buffer this full wakes the writer early
  static constexpr std::size_t max_pending = 2 * 1024 * 1024;  // per I/O thread; lines beyond are dropped

  // `writers`: the I/O threads (each writes with its own index); `fd` is where lines go (stdout).
  access_log(log_format format, std::size_t writers, int fd = 1,
             std::chrono::milliseconds flush_interval = default_flush_interval);
  ~access_log();  // writes what is buffered (within the writer's patience), then ends the writer thread
  access_log(const access_log&) = delete;
  access_log& operator=(const access_log&) = delete;

  // On I/O thread `writer` (another thread's index would only cost contention: each buffer has a lock).
  void write(std::size_t writer, const access_entry& entry);
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  struct lane;
  void run();
  void flush_all(std::vector<std::string>& batches);
  void write_batch(const std::string& batch);

  log_format format_;
  int fd_;
  bool fd_is_file_;  // a regular file takes a batch in one write(); anything else in PIPE_BUF pieces
  std::chrono::milliseconds flush_interval_;
  std::vector<std::unique_ptr<lane>> lanes_;
  std::atomic<std::uint64_t> dropped_{0};
  std::chrono::steady_clock::time_point stuck_until_{};  // writer thread only
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool wake_asked_ = false;  // under wake_mutex_
  bool stopping_ = false;    // under wake_mutex_
  std::thread writer_;
};

// Installs the diagnostic logger (stderr, asynchronous, `format` json or text) as spdlog's default.
void setup_diagnostic_log(log_format format, const std::string& level);

// Appends the line, without its newline, to `out`.
void append_access_line(std::string& out, const access_entry& entry, log_format format,
                        time_stamp_cache& stamps);
std::string format_access_line(const access_entry& entry, log_format format);  // for tests

// A line in the diagnostic log's format (an info message) on stdout, written at once: the listeners'
// addresses at start, which scripts wait for among the access log's lines.
void print_startup_line(log_format format, std::string_view message);

}  // namespace gateway
