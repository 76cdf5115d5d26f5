// port_handoff on real loopback sockets: two listeners share a port (SO_REUSEPORT), one of them is closed
// and replaced again and again, as a restart does, while clients keep opening connections to the port.
// None of those connections may be reset.

#include "gateway/server/port_handoff.hpp"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace gateway;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// A non-blocking listening socket on 127.0.0.1:`port` (0: any), shared with SO_REUSEPORT.
int listen_on(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  const auto a = loopback(port);
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(fd, 4096) == 0);
  return fd;
}

std::uint16_t port_of(int fd) {
  sockaddr_in a{};
  socklen_t size = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size);
  return ntohs(a.sin_port);
}

// Answers a connection's one byte with "y" and closes it.
void answer(int fd) {
  pollfd p{fd, POLLIN, 0};
  char c = 0;
  if (::poll(&p, 1, 2000) == 1 && ::recv(fd, &c, 1, 0) == 1) ::send(fd, "y", 1, MSG_NOSIGNAL);
  ::close(fd);
}

// Serves `fd` until `hand_off` is set; then, as the gateway's drain does: refuses new handshakes (when
// `refuse`), goes on accepting for `grace`, takes what is left in the queue, closes the listener, and
// answers what it took.
void serve(int fd, const std::atomic<bool>& hand_off, bool refuse, std::chrono::milliseconds grace) {
  const auto take_waiting = [fd] {
    std::vector<int> taken;
    for (;;) {
      const int c = ::accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (c < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return taken;
      }
      taken.push_back(c);
    }
  };
  const auto serve_for = [&](steady::time_point until, const std::atomic<bool>* stop) {
    while ((stop == nullptr || !*stop) && steady::now() < until) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 5) == 1)
        for (const int c : take_waiting()) answer(c);
    }
  };
  serve_for(steady::time_point::max(), &hand_off);
  if (refuse) REQUIRE(port_handoff::refuse_new_handshakes(fd));
  serve_for(steady::now() + grace, nullptr);
  const auto last = take_waiting();
  ::close(fd);
  for (const int c : last) answer(c);
}

struct client_tally {
  std::atomic<int> answered{0};
  std::atomic<int> slow{0};  // took more than 0.5 s: a SYN sent again
  std::mutex lock;
  std::vector<std::string> failures;
};

// Opens a connection, sends one byte, reads the answer; until `stop`.
void client(std::uint16_t port, const std::atomic<bool>& stop, client_tally& tally) {
  while (!stop) {
    const auto start = steady::now();
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    timeval five{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &five, sizeof five);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &five, sizeof five);
    const auto a = loopback(port);
    std::string failure;
    char c = 0;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
      failure = std::string("connect: ") + std::strerror(errno);
    } else if (::send(fd, "x", 1, MSG_NOSIGNAL) != 1) {
      failure = std::string("send: ") + std::strerror(errno);
    } else if (const auto n = ::recv(fd, &c, 1, 0); n != 1 || c != 'y') {
      failure =
          n == 0 ? std::string("closed without an answer") : std::string("recv: ") + std::strerror(errno);
    }
    ::close(fd);
    if (!failure.empty()) {
      const std::lock_guard hold(tally.lock);
      tally.failures.push_back(failure);
      continue;
    }
    ++tally.answered;
    if (steady::now() - start > 500ms) ++tally.slow;
  }
}

}  // namespace

TEST_CASE(
    "port handoff: a listener closed again and again while clients connect to the port it shares "
    "resets none of them",
    "[port_handoff]") {
  const int stays = listen_on(0);
  const auto port = port_of(stays);
  std::atomic<bool> stays_stop{false};
  std::thread stays_server([&] { serve(stays, stays_stop, false, 0ms); });

  client_tally tally;
  std::atomic<bool> clients_stop{false};
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i) clients.emplace_back([&] { client(port, clients_stop, tally); });

  constexpr int rounds = 40;
  for (int round = 0; round < rounds; ++round) {
    const int leaves = listen_on(port);
    CHECK(port_handoff::shared(leaves));
    std::atomic<bool> hand_off{false};
    std::thread leaving([&] { serve(leaves, hand_off, true, 20ms); });
    std::this_thread::sleep_for(30ms);
    hand_off = true;
    leaving.join();
  }
  std::this_thread::sleep_for(1500ms);  // the SYNs dropped in the last round are sent again
  clients_stop = true;
  for (auto& t : clients) t.join();
  stays_stop = true;
  stays_server.join();

  std::string listed;
  for (std::size_t i = 0; i < tally.failures.size() && i < 5; ++i) listed += tally.failures[i] + "\n";
  INFO(tally.failures.size() << " connections failed over " << rounds << " closes:\n" << listed);
  CHECK(tally.failures.empty());
  CHECK(tally.answered > 1000);
  WARN(tally.answered << " answered, " << tally.slow << " of them after a SYN sent again");
}

TEST_CASE("port handoff: shared() sees another listener on the same address and port, and only that",
          "[port_handoff]") {
  const int first = listen_on(0);
  const auto port = port_of(first);
  CHECK_FALSE(port_handoff::shared(first));

  const int other_port = listen_on(0);  // a listener elsewhere changes nothing
  CHECK_FALSE(port_handoff::shared(first));

  // A connection established to the port is not a listener.
  const int peer = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const auto a = loopback(port);
  REQUIRE(::connect(peer, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);
  CHECK_FALSE(port_handoff::shared(first));

  const int second = listen_on(port);
  CHECK(port_handoff::shared(first));
  CHECK(port_handoff::shared(second));
  ::close(second);
  CHECK_FALSE(port_handoff::shared(first));

  // The same port on another address is another port.
  const int any = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(any, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_in wildcard = loopback(port);
  wildcard.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(any, reinterpret_cast<const sockaddr*>(&wildcard), sizeof wildcard) == 0 &&
      ::listen(any, 8) == 0)
    CHECK_FALSE(port_handoff::shared(first));
  ::close(any);

  CHECK_FALSE(port_handoff::shared(-1));
  ::close(peer);
  ::close(other_port);
  ::close(first);
}

TEST_CASE(
    "port handoff: a listener that refuses new handshakes drops their SYNs, and the connections it took "
    "before keep working",
    "[port_handoff]") {
  const int fd = listen_on(0);
  const auto a = loopback(port_of(fd));
  const int before = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(::connect(before, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);
  pollfd waiting{fd, POLLIN, 0};
  REQUIRE(::poll(&waiting, 1, 2000) == 1);
  const int taken = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
  REQUIRE(taken >= 0);

  REQUIRE(port_handoff::refuse_new_handshakes(fd));

  // A new connection's SYN is dropped: its handshake does not complete (no other listener takes it).
  const int after = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int started = ::connect(after, reinterpret_cast<const sockaddr*>(&a), sizeof a);
  CHECK((started == 0 || errno == EINPROGRESS));
  pollfd p{after, POLLOUT, 0};
  CHECK(::poll(&p, 1, 300) == 0);

  // The connection taken before still carries bytes both ways.
  REQUIRE(::send(before, "ab", 2, MSG_NOSIGNAL) == 2);
  char buf[2]{};
  REQUIRE(::recv(taken, buf, 2, MSG_WAITALL) == 2);
  CHECK(std::string(buf, 2) == "ab");
  REQUIRE(::send(taken, "cd", 2, MSG_NOSIGNAL) == 2);
  REQUIRE(::recv(before, buf, 2, MSG_WAITALL) == 2);
  CHECK(std::string(buf, 2) == "cd");

  ::close(after);
  ::close(before);
  ::close(taken);
  ::close(fd);
}
