#pragma once
// A child process for integration tests: spawned with an argument vector, its stdout read through a pipe,
// its stderr written to a file (so a chatty child can never block on a full pipe). The destructor sends
// SIGTERM, waits a bounded time, then SIGKILLs and reaps it. Failures to spawn throw std::runtime_error.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace test_support {

using std::chrono::milliseconds;

struct exit_status {
  bool exited = false;  // false: killed by a signal
  int code = -1;        // exit code, or the signal number when !exited
};

class child_process {
 public:
  // argv[0] is the executable path. stderr goes to `stderr_path` (created or truncated).
  child_process(std::vector<std::string> argv, std::string stderr_path);
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;
  ~child_process();

  // Reads stdout until a line matches `pattern` (regex_search); returns the match groups (0 = the whole
  // match), or nullopt if the timeout passes or stdout closes first.
  std::optional<std::vector<std::string>> wait_for_line(const std::regex& pattern, milliseconds timeout);

  // True while the child has not exited (reaps it if it has).
  bool running();

  // Waits for the child to exit by itself, reading stdout meanwhile; nullopt on timeout.
  std::optional<exit_status> wait_exit(milliseconds timeout);

  // Sends `signal` and waits for the exit; nullopt on timeout.
  std::optional<exit_status> stop(int signal, milliseconds timeout);

  pid_t pid() const { return pid_; }
  const std::string& stdout_text() const { return stdout_; }  // everything read so far
  std::string stderr_text() const;                            // contents of the stderr file
  const std::string& command_line() const { return command_line_; }

 private:
  // Reads available stdout for at most `timeout`; returns false at end of stream.
  bool read_stdout(milliseconds timeout);
  bool reap(bool block);

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string stdout_;
  std::size_t scanned_ = 0;  // stdout_ before this offset holds lines already checked
  std::string stderr_path_;
  std::string command_line_;
  std::optional<exit_status> status_;
};

// Runs a command to completion (bounded by `timeout`, then killed) and returns its exit and output.
struct command_result {
  exit_status status;
  std::string out;
  std::string err;
};
command_result run_command(std::vector<std::string> argv, milliseconds timeout);

}  // namespace test_support
