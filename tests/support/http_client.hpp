#pragma once
// A small blocking HTTP/1.1 client over a plain TCP socket, for integration tests. Every operation has a
// timeout; failures (timeout, refused, closed mid-response, unparsable response) throw http_error.
// A connection can carry several requests (keep-alive) and can send arbitrary raw bytes.

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace test_support {

using std::chrono::milliseconds;

struct http_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using header_list = std::vector<std::pair<std::string, std::string>>;

struct http_response {
  int status = 0;
  std::string reason;
  header_list headers;
  std::string body;

  // First header with this name, compared case-insensitively.
  std::optional<std::string> header(std::string_view name) const;
  bool has_header(std::string_view name) const { return header(name).has_value(); }
  // Every header with this name, in order.
  std::vector<std::string> all(std::string_view name) const;
  // The body parsed as JSON; throws http_error (with the body) if it is not JSON.
  nlohmann::json json() const;
  // The calls X-Degraded lists, by name, joined by ','; nullopt without the header.
  std::optional<std::string> degraded_calls() const;
  // Why X-Degraded says `call` was degraded ("timeout"); nullopt when it does not list it.
  std::optional<std::string> degraded_reason(std::string_view call) const;
};

class http_connection {
 public:
  // Connects to host:port within `timeout`.
  http_connection(std::uint16_t port, milliseconds timeout = milliseconds(2000),
                  const std::string& host = "127.0.0.1");
  http_connection(http_connection&& other) noexcept;
  http_connection& operator=(http_connection&& other) noexcept;
  http_connection(const http_connection&) = delete;
  http_connection& operator=(const http_connection&) = delete;
  ~http_connection();

  // Sends one request (Host and Content-Length added) and reads its response.
  http_response request(std::string_view method, std::string_view target, const header_list& headers = {},
                        std::string_view body = {}, milliseconds timeout = milliseconds(5000));
  http_response get(std::string_view target, const header_list& headers = {},
                    milliseconds timeout = milliseconds(5000)) {
    return request("GET", target, headers, {}, timeout);
  }

  // Sends one request without reading the response.
  void send_request(std::string_view method, std::string_view target, const header_list& headers = {},
                    std::string_view body = {}, milliseconds timeout = milliseconds(5000));
  void send_raw(std::string_view bytes, milliseconds timeout = milliseconds(5000));
  http_response read_response(milliseconds timeout = milliseconds(5000));

  // Waits until the peer closes (end of stream or reset). Returns true if it did within `timeout`;
  // bytes received meanwhile are appended to `received` when given.
  bool wait_closed_by_peer(milliseconds timeout, std::string* received = nullptr);

  void shutdown_write();  // half-close: the peer reads end of stream
  void close();           // full close
  // Close with RST (SO_LINGER 0) instead of FIN.
  void reset();
  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }

 private:
  // Reads more bytes into buffer_ before `deadline`; returns false at end of stream.
  bool fill(std::chrono::steady_clock::time_point deadline);
  std::string read_line(std::chrono::steady_clock::time_point deadline);
  std::string read_exact(std::size_t n, std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
  std::string host_;
  std::uint16_t port_ = 0;
  std::string buffer_;  // received, not yet consumed
};

// One request on a fresh connection.
http_response http_get(std::uint16_t port, std::string_view target, const header_list& headers = {},
                       milliseconds timeout = milliseconds(5000));

// A port on which connections are refused: a socket bound to it but not listening (Linux answers a SYN
// with RST), held open so no other process takes the port while the test runs.
class refused_port {
 public:
  refused_port();
  refused_port(const refused_port&) = delete;
  refused_port& operator=(const refused_port&) = delete;
  ~refused_port();
  std::uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

// A port on which a connection attempt hangs: a listener with a backlog of zero whose queue is already
// filled by connections it never accepts, so Linux drops further SYNs and the connect stays pending.
class silent_port {
 public:
  silent_port();
  silent_port(const silent_port&) = delete;
  silent_port& operator=(const silent_port&) = delete;
  ~silent_port();
  std::uint16_t port() const { return port_; }

 private:
  int listener_ = -1;
  std::vector<int> fillers_;
  std::uint16_t port_ = 0;
};

}  // namespace test_support
