#pragma once
// A TCP socket bound to 127.0.0.1 on a port the kernel picks, for tests that need a port of their own: one
// that listens but never accepts (a hung or overloaded downstream), or a port to give several processes.

#include <cstdint>
#include <utility>

namespace test_support {

class loopback_socket {
 public:
  // Listening with `backlog` when it is 0 or more; only bound when negative. Throws when that fails.
  explicit loopback_socket(int backlog);
  loopback_socket(const loopback_socket&) = delete;
  loopback_socket& operator=(const loopback_socket&) = delete;
  ~loopback_socket();  // closes it

  int fd() const { return fd_; }
  // The descriptor, now the caller's to close.
  int release() { return std::exchange(fd_, -1); }
  std::uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

// A loopback port that was free a moment ago (bound, then closed).
std::uint16_t free_loopback_port();

}  // namespace test_support
