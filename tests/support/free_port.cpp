#include "tests/support/free_port.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>
#include <stdexcept>

namespace test_support {

bool port_is_free(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return free;
}

std::uint16_t random_free_port(int first, int last, const std::string& what) {
  std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
  std::uniform_int_distribution<int> pick(first, last);
  for (int i = 0; i < 200; ++i) {
    const auto port = static_cast<std::uint16_t>(pick(rng));
    if (port_is_free(port)) return port;
  }
  throw std::runtime_error("no free port found for " + what + " in " + std::to_string(first) + "-" +
                           std::to_string(last));
}

}  // namespace test_support
