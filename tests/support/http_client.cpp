#include "tests/support/http_client.hpp"

#include "gateway/observe/degraded_list.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <tuple>

namespace test_support {
namespace {

using steady = std::chrono::steady_clock;

int poll_timeout(steady::time_point deadline) {
  auto left = std::chrono::duration_cast<milliseconds>(deadline - steady::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string errno_text(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

sockaddr_in make_address(const std::string& host, std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) throw http_error("bad IPv4 address " + host);
  return addr;
}

}  // namespace

std::optional<std::string> http_response::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return v;
  return std::nullopt;
}

std::vector<std::string> http_response::all(std::string_view name) const {
  std::vector<std::string> values;
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) values.push_back(v);
  return values;
}

std::optional<std::string> http_response::degraded_calls() const {
  const auto list = header("x-degraded");
  if (!list) return std::nullopt;
  return gateway::degraded_names(*list);
}

std::optional<std::string> http_response::degraded_reason(std::string_view call) const {
  std::optional<std::string> found;
  gateway::for_each_degraded(header("x-degraded").value_or(""),
                             [&](std::string_view name, std::string_view why) {
                               if (name == call) found = std::string(why);
                             });
  return found;
}

nlohmann::json http_response::json() const {
  try {
    return nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception& e) {
    throw http_error(std::string("response body is not JSON (") + e.what() + "): " + body.substr(0, 500));
  }
}

http_connection::http_connection(std::uint16_t port, milliseconds timeout, const std::string& host)
    : host_(host), port_(port) {
  auto deadline = steady::now() + timeout;
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw http_error(errno_text("socket"));
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr = make_address(host, port);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno != EINPROGRESS) {
      std::string msg = errno_text("connect");
      close();
      throw http_error(msg + " to " + host + ":" + std::to_string(port));
    }
    pollfd p{fd_, POLLOUT, 0};
    int n;
    do {
      n = ::poll(&p, 1, poll_timeout(deadline));
    } while (n < 0 && errno == EINTR);
    int err = 0;
    socklen_t len = sizeof err;
    if (n > 0) ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (n <= 0 || err != 0) {
      std::string msg =
          n <= 0 ? std::string("connect timed out") : "connect: " + std::string(std::strerror(err));
      close();
      throw http_error(msg + " to " + host + ":" + std::to_string(port));
    }
  }
}

http_connection::http_connection(http_connection&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      host_(std::move(other.host_)),
      port_(other.port_),
      buffer_(std::move(other.buffer_)) {}

http_connection& http_connection::operator=(http_connection&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    host_ = std::move(other.host_);
    port_ = other.port_;
    buffer_ = std::move(other.buffer_);
  }
  return *this;
}

http_connection::~http_connection() {
  close();
}

void http_connection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void http_connection::reset() {
  if (fd_ < 0) return;
  linger l{1, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  close();
}

void http_connection::shutdown_write() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

void http_connection::send_raw(std::string_view bytes, milliseconds timeout) {
  if (fd_ < 0) throw http_error("send on a closed connection");
  auto deadline = steady::now() + timeout;
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, poll_timeout(deadline)) == 0) throw http_error("send timed out");
      continue;
    }
    throw http_error(errno_text("send"));
  }
}

void http_connection::send_request(std::string_view method, std::string_view target,
                                   const header_list& headers, std::string_view body, milliseconds timeout) {
  std::string out;
  out.append(method).append(" ").append(target).append(" HTTP/1.1\r\n");
  bool has_host = false;
  for (const auto& [k, v] : headers) {
    has_host = has_host || iequals(k, "host");
    out.append(k).append(": ").append(v).append("\r\n");
  }
  if (!has_host) out.append("Host: ").append(host_).append(":").append(std::to_string(port_)).append("\r\n");
  if (!body.empty() || method == "POST" || method == "PUT")
    out.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  out.append("\r\n").append(body);
  send_raw(out, timeout);
}

http_response http_connection::request(std::string_view method, std::string_view target,
                                       const header_list& headers, std::string_view body,
                                       milliseconds timeout) {
  auto deadline = steady::now() + timeout;
  send_request(method, target, headers, body, timeout);
  return read_response(std::chrono::duration_cast<milliseconds>(deadline - steady::now()));
}

bool http_connection::fill(steady::time_point deadline) {
  if (fd_ < 0) throw http_error("receive on a closed connection");
  char buf[16384];
  for (;;) {
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) {
      buffer_.append(buf, static_cast<std::size_t>(n));
      return true;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd p{fd_, POLLIN, 0};
      int ready = ::poll(&p, 1, poll_timeout(deadline));
      if (ready == 0) throw http_error("receive timed out");
      continue;
    }
    if (errno == ECONNRESET) return false;
    throw http_error(errno_text("recv"));
  }
}

std::string http_connection::read_line(steady::time_point deadline) {
  for (;;) {
    auto eol = buffer_.find("\r\n");
    if (eol != std::string::npos) {
      std::string line = buffer_.substr(0, eol);
      buffer_.erase(0, eol + 2);
      return line;
    }
    if (buffer_.size() > 64 * 1024) throw http_error("response line too long");
    if (!fill(deadline)) throw http_error("connection closed before the end of a line");
  }
}

std::string http_connection::read_exact(std::size_t n, steady::time_point deadline) {
  while (buffer_.size() < n)
    if (!fill(deadline)) throw http_error("connection closed in the middle of a body");
  std::string out = buffer_.substr(0, n);
  buffer_.erase(0, n);
  return out;
}

http_response http_connection::read_response(milliseconds timeout) {
  auto deadline = steady::now() + timeout;
  http_response res;
  for (;;) {  // skip interim 1xx responses
    std::string status_line = read_line(deadline);
    // "HTTP/1.1 200 OK"
    if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12)
      throw http_error("bad status line: " + status_line);
    std::string_view code = std::string_view(status_line).substr(9, 3);
    if (std::from_chars(code.data(), code.data() + 3, res.status).ec != std::errc{})
      throw http_error("bad status line: " + status_line);
    res.reason = status_line.size() > 13 ? status_line.substr(13) : "";
    res.headers.clear();
    for (std::string line = read_line(deadline); !line.empty(); line = read_line(deadline)) {
      auto colon = line.find(':');
      if (colon == std::string::npos) throw http_error("bad header line: " + line);
      res.headers.emplace_back(line.substr(0, colon),
                               std::string(trim(std::string_view(line).substr(colon + 1))));
    }
    if (res.status >= 200) break;
  }

  auto te = res.header("transfer-encoding");
  auto cl = res.header("content-length");
  if (te && te->find("chunked") != std::string::npos) {
    for (;;) {
      std::string size_line = read_line(deadline);
      std::size_t size = 0;
      auto [end, ec] = std::from_chars(size_line.data(), size_line.data() + size_line.size(), size, 16);
      if (ec != std::errc{} || end == size_line.data()) throw http_error("bad chunk size: " + size_line);
      if (size == 0) {
        while (!read_line(deadline).empty()) {  // trailers
        }
        break;
      }
      res.body += read_exact(size, deadline);
      if (!read_line(deadline).empty()) throw http_error("missing CRLF after a chunk");
    }
  } else if (cl) {
    std::size_t size = 0;
    auto [end, ec] = std::from_chars(cl->data(), cl->data() + cl->size(), size);
    if (ec != std::errc{} || end != cl->data() + cl->size()) throw http_error("bad Content-Length: " + *cl);
    res.body = read_exact(size, deadline);
  } else if (res.status != 204 && res.status != 304) {
    while (fill(deadline)) {  // body delimited by the end of the connection
    }
    res.body = std::move(buffer_);
    buffer_.clear();
  }
  return res;
}

bool http_connection::wait_closed_by_peer(milliseconds timeout, std::string* received) {
  auto deadline = steady::now() + timeout;
  if (received) *received += buffer_;
  buffer_.clear();
  try {
    while (fill(deadline)) {
      if (received) *received += buffer_;
      buffer_.clear();
    }
    return true;
  } catch (const http_error&) {
    return false;
  }
}

http_response http_get(std::uint16_t port, std::string_view target, const header_list& headers,
                       milliseconds timeout) {
  auto deadline = steady::now() + timeout;
  http_connection conn(port, timeout);
  return conn.get(target, headers, std::chrono::duration_cast<milliseconds>(deadline - steady::now()));
}

namespace {

// A TCP socket bound to a free loopback port (listening with `backlog` unless it is negative): the socket
// and the port; throws on failure.
std::pair<int, std::uint16_t> loopback_socket(int backlog) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw http_error(errno_text("socket"));
  sockaddr_in addr = make_address("127.0.0.1", 0);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      (backlog >= 0 && ::listen(fd, backlog) != 0) ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::string msg = errno_text("bind");
    ::close(fd);
    throw http_error(msg);
  }
  return {fd, ntohs(addr.sin_port)};
}

}  // namespace

refused_port::refused_port() {
  std::tie(fd_, port_) = loopback_socket(-1);
}

refused_port::~refused_port() {
  if (fd_ >= 0) ::close(fd_);
}

silent_port::silent_port() {
  std::tie(listener_, port_) = loopback_socket(0);
  sockaddr_in addr = make_address("127.0.0.1", port_);
  // Fill the accept queue: a backlog of 0 holds one connection; a second one waits in SYN state.
  for (int i = 0; i < 2; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) break;
    ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);  // EINPROGRESS: completes or hangs
    fillers_.push_back(fd);
  }
  ::usleep(50'000);  // let the handshakes of the fillers land
}

silent_port::~silent_port() {
  for (int fd : fillers_) ::close(fd);
  if (listener_ >= 0) ::close(listener_);
}

}  // namespace test_support
