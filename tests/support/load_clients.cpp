#include "tests/support/load_clients.hpp"

#include "tests/support/offer_checks.hpp"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <exception>
#include <regex>
#include <thread>
#include <utility>

namespace test_support {

std::uint16_t local_port(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

raw_response parse_raw_response(const std::string& bytes) {
  raw_response r;
  const auto end = bytes.find("\r\n\r\n");
  if (end == std::string::npos) return r;
  r.head = bytes.substr(0, end + 2);
  std::string lower = r.head;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::regex status_line(R"(^HTTP/1\.1 ([0-9]{3}) )");
  static const std::regex length(R"(\r\ncontent-length: *([0-9]+)\r\n)");
  std::smatch m;
  if (!std::regex_search(r.head, m, status_line)) {
    r.problem = "bad status line";
    return r;
  }
  r.status = std::stoi(m[1]);
  if (!std::regex_search(lower, m, length)) {
    r.problem = "no Content-Length";
    return r;
  }
  const auto size = std::stoul(m[1]);
  r.close = lower.find("\r\nconnection: close\r\n") != std::string::npos;
  if (bytes.size() < end + 4 + size) return r;
  r.body = bytes.substr(end + 4);
  if (r.body.size() > size) r.problem = "more bytes than Content-Length says";
  r.body.resize(size);
  r.complete = true;
  return r;
}

// ---- drain_run

drain_run::drain_run(std::uint16_t port, int count) : clients_(static_cast<std::size_t>(count)) {
  address_.sin_family = AF_INET;
  address_.sin_port = htons(port);
  address_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < count; ++i) {
    clients_[static_cast<std::size_t>(i)].index = i;
    connect(clients_[static_cast<std::size_t>(i)]);
  }
}

drain_run::~drain_run() {
  for (auto& c : clients_) close(c);
}

void drain_run::poll_once(std::chrono::milliseconds timeout) {
  std::vector<pollfd> fds;
  std::vector<drain_client*> owners;  // of each pollfd
  for (auto& c : clients_) {
    if (c.at == drain_client::phase::done) continue;
    const short events = c.at == drain_client::phase::reading ? POLLIN : POLLOUT;
    fds.push_back({c.fd, events, 0});
    owners.push_back(&c);
  }
  ::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    auto& c = *owners[i];
    if (c.at == drain_client::phase::reading) {
      on_readable(c);
    } else {
      on_writable(c);
    }
  }
  for (auto& c : clients_) {
    if (c.at != drain_client::phase::done && steady_clock::now() - c.since > std::chrono::seconds(5)) {
      fail(c, "no progress for 5 s");
      close(c);
    }
  }
}

bool drain_run::all_answered(int n) const {
  return std::all_of(clients_.begin(), clients_.end(), [n](const auto& c) { return c.answered >= n; });
}

int drain_run::in_flight() const {
  int n = 0;
  for (const auto& c : clients_)
    n += c.at == drain_client::phase::sending || c.at == drain_client::phase::reading;
  return n;
}

bool drain_run::all_done() const {
  return std::all_of(clients_.begin(), clients_.end(),
                     [](const auto& c) { return c.at == drain_client::phase::done; });
}

void drain_run::close_all(const std::string& why) {
  for (auto& c : clients_) {
    if (c.at != drain_client::phase::done) fail(c, why);
    close(c);
  }
}

void drain_run::fail(const drain_client& c, const std::string& what) {
  failures.push_back("client " + std::to_string(c.index) + ": " + what);
}

void drain_run::close(drain_client& c) {
  if (c.fd >= 0) ::close(c.fd);
  c.fd = -1;
  c.at = drain_client::phase::done;
}

void drain_run::connect(drain_client& c) {
  c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c.at = drain_client::phase::connecting;
  c.since = steady_clock::now();
  if (::connect(c.fd, reinterpret_cast<const sockaddr*>(&address_), sizeof address_) != 0 &&
      errno != EINPROGRESS)
    connect_failed(c, errno);
}

void drain_run::connect_failed(drain_client& c, int error) {
  close(c);
  if (error == ECONNREFUSED && signalled) {
    ++refused;
  } else if (error == ECONNRESET && signalled) {
    ++not_accepted;
    connect(c);
  } else {
    fail(c, std::string("connect: ") + std::strerror(error));
  }
}

void drain_run::send_request(drain_client& c) {
  c.out = "GET " + offer_target(numbered_sku("D", c.index)) + " HTTP/1.1\r\nHost: gateway\r\n\r\n";
  c.in.clear();
  c.at = drain_client::phase::sending;
  c.since = steady_clock::now();
  on_writable(c);
}

// The connection ended before any byte of the answer: the request was not accepted.
void drain_run::lost_before_answer(drain_client& c, const std::string& how) {
  close(c);
  if (!signalled) return fail(c, "connection " + how + " before any answer byte, before SIGTERM");
  ++not_accepted;
  connect(c);  // what a client does with an idempotent request on a kept-alive connection
}

void drain_run::on_writable(drain_client& c) {
  if (c.at == drain_client::phase::connecting) {
    int error = 0;
    socklen_t len = sizeof error;
    ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) return connect_failed(c, error);
    return send_request(c);
  }
  const auto n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n < 0) return lost_before_answer(c, std::string("failed on send (") + std::strerror(errno) + ")");
  c.out.erase(0, static_cast<std::size_t>(n));
  if (c.out.empty()) c.at = drain_client::phase::reading;
}

void drain_run::on_readable(drain_client& c) {
  char buffer[16384];
  const auto n = ::recv(c.fd, buffer, sizeof buffer, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {
    const std::string how = n == 0 ? "closed" : std::string("failed (") + std::strerror(errno) + ")";
    if (c.in.empty()) return lost_before_answer(c, how);
    fail(c, "connection " + how + " mid-answer after " + std::to_string(c.in.size()) + " bytes: " + c.in);
    return close(c);
  }
  c.in.append(buffer, static_cast<std::size_t>(n));
  const auto r = parse_raw_response(c.in);
  if (!r.problem.empty()) {
    fail(c, r.problem + ": " + c.in.substr(0, 300));
    return close(c);
  }
  if (!r.complete) return;
  const auto body = nlohmann::json::parse(r.body, nullptr, false);
  if (r.status != 200 || !body.is_array() || body.size() != seed_calls.size()) {
    fail(c, "answer " + std::to_string(r.status) + ": " + r.body.substr(0, 300));
    return close(c);
  }
  ++c.answered;
  ++(signalled ? answered_during : answered_before);
  if (!r.close) return send_request(c);
  close(c);
  connect(c);
}

// ---- run_threaded_load

threaded_load_result run_threaded_load(std::uint16_t port, int threads, int per_thread,
                                       const std::string& sku_prefix) {
  std::atomic<int> answered{0};
  std::atomic<long long> slowest_ms{0};
  std::vector<std::string> errors(static_cast<std::size_t>(threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      try {
        http_connection conn(port);
        for (int i = 0; i < per_thread; ++i) {
          const auto start = steady_clock::now();
          auto res = conn.get(offer_target(numbered_sku(sku_prefix, t * per_thread + i)), {},
                              std::chrono::seconds(5));
          const long long took = elapsed_since(start).count();
          for (auto seen = slowest_ms.load(); took > seen && !slowest_ms.compare_exchange_weak(seen, took);) {
          }
          if (res.status != 200) throw http_error("status " + std::to_string(res.status));
          ++answered;
        }
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(t)] = e.what();
      }
    });
  }
  for (auto& w : workers) w.join();
  return {answered.load(), slowest_ms.load(), std::move(errors)};
}

}  // namespace test_support
