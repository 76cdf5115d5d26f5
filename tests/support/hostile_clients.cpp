#include "tests/support/hostile_clients.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>
#include <vector>

namespace test_support {
namespace {

using std::chrono::steady_clock;
using namespace std::chrono_literals;

enum class kind { silent, one_byte, drip };

// The head a dripping socket sends, then 'a' forever: it never ends (nor reaches a header limit in
// the seconds a test runs).
constexpr std::string_view drip_text = "GET /livez HTTP/1.1\r\nHost: x\r\nX-Drip: ";
constexpr auto drip_every = 200ms;

struct hostile_socket {
  int fd = -1;
  kind behaves = kind::silent;
  bool connecting = false;
  std::size_t dripped = 0;
  steady_clock::time_point next_drip;
};

void send_byte(hostile_socket& s) {
  const char byte = s.behaves == kind::one_byte    ? 'G'
                    : s.dripped < drip_text.size() ? drip_text[s.dripped]
                                                   : 'a';
  if (::send(s.fd, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1) ++s.dripped;
  s.next_drip = steady_clock::now() + drip_every;
}

}  // namespace

hostile_clients::hostile_clients(std::uint16_t port, int count, int first, steady_clock::time_point until)
    : thread_([this, port, count, first, until] { run(port, count, first, until); }) {}

hostile_clients::~hostile_clients() {
  stop();
  if (thread_.joinable()) thread_.join();
}

void hostile_clients::stop() {
  stop_ = true;
}

void hostile_clients::run(std::uint16_t port, int count, int first, steady_clock::time_point until) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

  std::vector<hostile_socket> sockets(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < sockets.size(); ++i)
    sockets[i].behaves = static_cast<kind>((static_cast<std::size_t>(first) + i) % 3);

  auto close_socket = [&](hostile_socket& s, bool by_server) {
    if (!s.connecting) {
      --open_now_;
      if (by_server) ++closed_;
    }
    ::close(s.fd);
    s.fd = -1;
    s.connecting = false;
    s.dripped = 0;
  };
  auto connected = [&](hostile_socket& s) {
    s.connecting = false;
    ++opened_;
    ++open_now_;
    if (s.behaves != kind::silent) send_byte(s);
  };
  auto open = [&](hostile_socket& s) {
    s.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s.fd < 0) return;
    if (::connect(s.fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0) {
      connected(s);
    } else if (errno == EINPROGRESS) {
      s.connecting = true;
    } else {  // out of ports or descriptors for a moment: the next round tries again
      ::close(s.fd);
      s.fd = -1;
    }
  };

  std::vector<pollfd> polled;
  std::vector<hostile_socket*> of;
  char sink[4096];
  while (!stop_ && steady_clock::now() < until) {
    polled.clear();
    of.clear();
    for (auto& s : sockets) {
      if (s.fd < 0) open(s);
      if (s.fd < 0) continue;
      polled.push_back({s.fd, static_cast<short>(s.connecting ? POLLOUT : POLLIN), 0});
      of.push_back(&s);
    }
    ::poll(polled.data(), polled.size(), 20);
    const auto now = steady_clock::now();
    for (std::size_t i = 0; i < polled.size(); ++i) {
      auto& s = *of[i];
      if (s.connecting) {
        if (polled[i].revents == 0) continue;
        int error = 0;
        socklen_t size = sizeof error;
        ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &error, &size);
        if (error != 0) {
          close_socket(s, false);
        } else {
          connected(s);
        }
        continue;
      }
      if (polled[i].revents != 0) {
        const auto n = ::recv(s.fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n > 0) {
          received_ += n;
        } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
          close_socket(s, true);
          continue;
        }
      }
      if (s.behaves == kind::drip && now >= s.next_drip) send_byte(s);
    }
  }
  for (auto& s : sockets) {
    if (s.fd >= 0) close_socket(s, false);
  }
}

}  // namespace test_support
