#include "tests/support/child_process.hpp"

#include "tests/support/temp_dir.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace test_support {
namespace {

using steady = std::chrono::steady_clock;

milliseconds left_until(steady::time_point deadline) {
  auto left = std::chrono::duration_cast<milliseconds>(deadline - steady::now());
  return left.count() > 0 ? left : milliseconds(0);
}

exit_status decode(int raw) {
  if (WIFEXITED(raw)) return {true, WEXITSTATUS(raw)};
  if (WIFSIGNALED(raw)) return {false, WTERMSIG(raw)};
  return {};
}

}  // namespace

child_process::child_process(std::vector<std::string> argv, std::string stderr_path)
    : stderr_path_(std::move(stderr_path)) {
  if (argv.empty()) throw std::invalid_argument("child_process: empty argv");
  for (const auto& a : argv) command_line_ += (command_line_.empty() ? "" : " ") + a;

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2: " + std::string(std::strerror(errno)));

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);

  // The test runner may block or ignore signals; the child starts with defaults.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);

  int rc = ::posix_spawn(&pid_, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    pid_ = -1;
    throw std::runtime_error("posix_spawn " + argv[0] + ": " + std::strerror(rc));
  }
  stdout_fd_ = fds[0];
  ::fcntl(stdout_fd_, F_SETFL, ::fcntl(stdout_fd_, F_GETFL) | O_NONBLOCK);
}

child_process::~child_process() {
  if (pid_ > 0 && !status_) {
    if (!stop(SIGTERM, milliseconds(3000))) {
      ::kill(pid_, SIGKILL);
      reap(true);
    }
  }
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
}

bool child_process::read_stdout(milliseconds timeout) {
  if (stdout_fd_ < 0) return false;
  pollfd p{stdout_fd_, POLLIN, 0};
  int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
  if (n <= 0) return true;
  char buf[4096];
  for (;;) {
    ssize_t got = ::read(stdout_fd_, buf, sizeof buf);
    if (got > 0) {
      stdout_.append(buf, static_cast<std::size_t>(got));
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    ::close(stdout_fd_);  // end of stream or a hard error
    stdout_fd_ = -1;
    return false;
  }
}

std::optional<std::vector<std::string>> child_process::wait_for_line(const std::regex& pattern,
                                                                     milliseconds timeout) {
  auto deadline = steady::now() + timeout;
  for (;;) {
    // Check every complete line not yet checked.
    for (auto eol = stdout_.find('\n', scanned_); eol != std::string::npos;
         eol = stdout_.find('\n', scanned_)) {
      std::string line = stdout_.substr(scanned_, eol - scanned_);
      scanned_ = eol + 1;
      std::smatch m;
      if (std::regex_search(line, m, pattern)) {
        std::vector<std::string> groups;
        for (const auto& g : m) groups.push_back(g.str());
        return groups;
      }
    }
    if (steady::now() >= deadline) return std::nullopt;
    if (!read_stdout(std::min(left_until(deadline), milliseconds(100)))) {
      if (stdout_.find('\n', scanned_) == std::string::npos) return std::nullopt;
    }
  }
}

bool child_process::reap(bool block) {
  if (status_) return true;
  if (pid_ <= 0) return false;
  int raw = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &raw, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    status_ = decode(raw);
    return true;
  }
  return false;
}

bool child_process::running() {
  return pid_ > 0 && !reap(false);
}

std::optional<exit_status> child_process::wait_exit(milliseconds timeout) {
  auto deadline = steady::now() + timeout;
  while (!reap(false)) {
    if (steady::now() >= deadline) return std::nullopt;
    // Drain stdout so the child never blocks writing it; sleep briefly once it is closed.
    if (!read_stdout(std::min(left_until(deadline), milliseconds(10))))
      std::this_thread::sleep_for(milliseconds(5));
  }
  // Collect what the child wrote before exiting (the pipe reaches end of stream quickly).
  for (int i = 0; i < 100 && stdout_fd_ >= 0; ++i) {
    std::size_t before = stdout_.size();
    if (!read_stdout(milliseconds(20)) || stdout_.size() == before) break;
  }
  return status_;
}

std::optional<exit_status> child_process::stop(int signal, milliseconds timeout) {
  if (status_) return status_;
  if (pid_ <= 0) return std::nullopt;
  ::kill(pid_, signal);
  return wait_exit(timeout);
}

std::string child_process::stderr_text() const {
  std::ifstream in(stderr_path_, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

command_result run_command(std::vector<std::string> argv, milliseconds timeout) {
  temp_dir dir;
  child_process child(std::move(argv), dir.file("stderr"));
  auto status = child.wait_exit(timeout);
  if (!status) {
    status = child.stop(SIGKILL, milliseconds(5000));
    if (!status) throw std::runtime_error("cannot stop " + child.command_line());
    throw std::runtime_error(child.command_line() + " did not exit within " +
                             std::to_string(timeout.count()) + " ms");
  }
  return {*status, child.stdout_text(), child.stderr_text()};
}

}  // namespace test_support
