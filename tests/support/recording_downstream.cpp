#include "tests/support/recording_downstream.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <stdexcept>
#include <string_view>

namespace test_support {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Content-Length of a head, 0 when it has none (the gateway never sends chunked bodies here in tests).
std::size_t content_length(std::string_view head) {
  std::size_t at = 0;
  while ((at = head.find("\r\n", at)) != std::string_view::npos) {
    at += 2;
    const auto colon = head.find(':', at);
    const auto end = head.find("\r\n", at);
    if (colon == std::string_view::npos || end == std::string_view::npos || colon > end) continue;
    if (iequals(head.substr(at, colon - at), "content-length"))
      return std::stoul(std::string(head.substr(colon + 1, end - colon - 1)));
  }
  return 0;
}

}  // namespace

recording_downstream::recording_downstream() {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener_ < 0) throw std::runtime_error("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener_, 64) != 0 ||
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("bind/listen");
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { run(); });
}

recording_downstream::~recording_downstream() {
  stop_ = true;
  thread_.join();
  ::close(listener_);
}

std::vector<std::string> recording_downstream::heads() const {
  std::lock_guard lock(mutex_);
  return heads_;
}

std::vector<std::string> recording_downstream::targets() const {
  std::vector<std::string> out;
  for (const auto& head : heads()) {
    const auto first = head.find(' ');
    const auto second = head.find(' ', first + 1);
    out.push_back(head.substr(first + 1, second - first - 1));
  }
  return out;
}

std::string recording_downstream::last_field(const std::string& name) const {
  const auto all = heads();
  if (all.empty()) return "<absent>";
  std::string_view head = all.back();
  std::string value;
  bool found = false;
  std::size_t at = head.find("\r\n");
  while (at != std::string_view::npos && at + 2 < head.size()) {
    at += 2;
    const auto end = head.find("\r\n", at);
    const auto line = head.substr(at, end - at);
    const auto colon = line.find(':');
    if (colon != std::string_view::npos && iequals(line.substr(0, colon), name)) {
      if (found) value += ", ";
      auto v = line.substr(colon + 1);
      while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      value += v;
      found = true;
    }
    at = end;
  }
  return found ? value : "<absent>";
}

// One connection at a time is enough for these tests: the gateway's pool reuses it. Others wait in the
// backlog until it closes.
void recording_downstream::run() {
  while (!stop_) {
    pollfd p{listener_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    serve(fd);
    ::close(fd);
  }
}

void recording_downstream::serve(int fd) {
  std::string buffer;
  char chunk[4096];
  const auto idle_until = [] { return std::chrono::steady_clock::now() + std::chrono::seconds(5); };
  auto until = idle_until();
  while (!stop_ && std::chrono::steady_clock::now() < until) {
    const auto end = buffer.find("\r\n\r\n");
    if (end != std::string::npos) {
      const auto head = buffer.substr(0, end + 4);
      const auto length = content_length(head);
      if (buffer.size() >= end + 4 + length) {
        {
          std::lock_guard lock(mutex_);
          heads_.push_back(head);
        }
        buffer.erase(0, end + 4 + length);
        const std::string_view answer =
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
        if (::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(answer.size())) return;
        until = idle_until();
        continue;
      }
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const auto n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return;
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
}

}  // namespace test_support
