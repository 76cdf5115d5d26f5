#include "tests/support/loopback_socket.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace test_support {

loopback_socket::loopback_socket(int backlog) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof at;
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0 ||
      (backlog >= 0 && ::listen(fd_, backlog) != 0) ||
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&at), &size) != 0) {
    const std::string why = std::strerror(errno);
    if (fd_ >= 0) ::close(fd_);
    throw std::runtime_error("loopback socket: " + why);
  }
  port_ = ntohs(at.sin_port);
}

loopback_socket::~loopback_socket() {
  if (fd_ >= 0) ::close(fd_);
}

std::uint16_t free_loopback_port() {
  return loopback_socket(-1).port();
}

}  // namespace test_support
