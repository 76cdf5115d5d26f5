// The downstream side against uncommon but legal HTTP and mislabelled answers: interim responses are
// skipped (never taken for the answer, which would hand the real one to the next client on that pooled
// connection), a body under a transfer coding the gateway does not decode fails the call, and an IPv6
// downstream gets a well-formed Host field.

#include "tests/support/offer_checks.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

using namespace test_support;
using namespace std::chrono_literals;

// Before the fix: the 103 was the answer (coupon degraded), the connection went back to the pool with the
// 200 still coming, and the next request on it (another client's) got {"sku":"LEAK-A",...} for LEAK-B.
TEST_CASE("an interim 103 before the answer is skipped and never reaches the next client",
          "[degraded][pool]") {
  mock_downstream mock({"--delay", "1ms", "--path", "coupon=interim:60ms"});
  seed_config cfg{mock.url()};
  cfg.threads = 1;
  cfg.max_connections = 1;  // one pooled connection per downstream: the next call reuses it
  gateway_process gw(cfg.yaml());
  for (int round = 0; round < 3; ++round) {
    const auto a = numbered_sku("LEAK-A", round);
    const auto b = numbered_sku("LEAK-B", round);
    http_connection first(gw.port());
    http_connection second(gw.port());
    check_offer(first.get(offer_target(a)), a);
    check_offer(second.get(offer_target(b)), b);  // its coupon entry must be b's, not a's
  }
  CHECK(mock.path_counter(mock.stats(), "coupon", "requests") == 6);
  check_clean_exit(gw);
}

// RFC 9112 6.1: the gateway decodes chunked only; a body labelled "gzip, chunked" is gzip data after
// dechunking, so using it as JSON would be wrong even when it happens to parse.
TEST_CASE("a downstream answer with a transfer coding the gateway does not decode is degraded",
          "[degraded]") {
  mock_downstream mock({"--delay", "1ms", "--path", "coupon=gzipchunked"});
  seed_config cfg{mock.url()};
  gateway_process gw(cfg.yaml());
  check_offer(http_get(gw.port(), offer_target("G1")), "G1", {"coupon"});
  check_clean_exit(gw);
}

namespace {

// A one-shot HTTP server on [::1]: records the request head of each connection, answers {"ok":1}.
class ipv6_server {
 public:
  ipv6_server() {
    fd_ = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    socklen_t len = sizeof a;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd_, 8) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      throw std::runtime_error("cannot listen on [::1]");
    }
    port_ = ntohs(a.sin6_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~ipv6_server() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::uint16_t port() const { return port_; }
  std::string head() {
    std::lock_guard lock(mutex_);
    return head_;
  }

 private:
  void serve() {
    for (;;) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::string got;
      char buf[4096];
      while (got.find("\r\n\r\n") == std::string::npos) {
        const auto n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        got.append(buf, static_cast<std::size_t>(n));
      }
      {
        std::lock_guard lock(mutex_);
        head_ = got;
      }
      const std::string answer =
          "HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\n{\"ok\":1}";
      [[maybe_unused]] auto sent = ::send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
      ::close(c);
    }
  }
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::string head_;
};

}  // namespace

TEST_CASE("an IPv6 downstream is sent Host with its address in brackets", "[propagation]") {
  ipv6_server server;
  const std::string yaml =
      "server:\n  listen: 127.0.0.1:0\n  threads: 1\n"
      "downstreams:\n  v6:\n    url: http://[::1]:" +
      std::to_string(server.port()) +
      "\n"
      "routes:\n  - path: /v6\n    calls:\n      - name: v6\n        downstream: v6\n"
      "        path: /x\n        fallback: {ok: 0}\n";
  gateway_process gw(yaml);
  auto res = http_get(gw.port(), "/v6");
  INFO(res.body);
  CHECK(res.status == 200);
  CHECK(res.body.find("\"ok\":1") != std::string::npos);
  const auto head = server.head();
  INFO(head);
  CHECK(head.find("\r\nHost: [::1]:" + std::to_string(server.port()) + "\r\n") != std::string::npos);
  check_clean_exit(gw);
}
