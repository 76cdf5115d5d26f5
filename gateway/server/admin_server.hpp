#pragma once
// The admin listener: a small HTTP/1.1 server on its own port and its own thread, so that probes and
// scrapes stay fast and correct while the public port is saturated. What each request gets is up to the
// handler, called on the admin thread; the server answers HEAD with the head of its GET. Beast-free header.
//
// Hostile sockets cannot keep a probe out. The listener admits every connection (admin_connections.hpp):
// when the new one's address already holds admin.max_connections_per_client, or admin.max_connections
// are open, the connection that has waited longest for a request head is closed (reset) to make room, so
// a socket that says nothing or drips holds a slot only until that many newer ones came. Each request
// must arrive whole (head and any body, 8 KiB and 64 KiB at most) within admin.header_timeout, counted
// from the accept for a connection's first request and from the first byte for the next ones; a
// kept-alive connection waits at most admin.idle_timeout for that byte, and an answer is written within
// 5 s. On Linux the listener also sets TCP_DEFER_ACCEPT (admin.header_timeout, rounded up to seconds), so
// the kernel holds a connection that has sent nothing instead of handing it over.
//
// A restart without a gap starts the new process with the same file while the old one drains, so the
// port can be shared (SO_REUSEPORT, with server.reuse_port; Linux shares it only between sockets of the
// same effective UID), and the kernel then gives each new admin connection to either process. The
// draining process keeps its listener while it still serves the public port (its /readyz says 503, which
// is what a lone process, as in Kubernetes, must tell its probes), and stops accepting when it closes the
// public listener (stop_accepting): from then on every new probe and scrape reaches the process that
// serves, and the old one's open admin connections get their answers with "Connection: close". Shortly
// before that, when the port is shared, it stops taking new handshakes (hand_off_port), so that its close
// resets none (port_handoff.hpp).

#include "gateway/config/config.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace gateway {

struct admin_request {
  std::string_view method;         // GET, HEAD, POST, ...
  std::string_view path;           // without its query
  std::string_view authorization;  // the Authorization field, empty when absent
  bool loopback = false;           // the peer's address is a loopback one
};

struct admin_reply {
  admin_reply(unsigned status_code = 200, std::string type = "text/plain; charset=utf-8",
              std::string text = {}, std::string allowed = {})
      : status(status_code),
        content_type(std::move(type)),
        body(std::move(text)),
        allow(std::move(allowed)) {}

  unsigned status;
  std::string content_type;
  std::string body;
  std::string allow;   // with 405
  std::string fields;  // more header lines, "Name: value\r\n" each
};

// What the listener did with its connections, for /metrics.
struct admin_connection_counts {
  std::size_t open = 0;
  std::uint64_t evicted_for_client = 0;  // closed: their address held max_connections_per_client
  std::uint64_t evicted_for_total = 0;   // closed: max_connections were open
  std::uint64_t timed_out = 0;           // closed: a request not whole in time, or an answer not taken
};

class admin_server {
 public:
  using handler = std::function<admin_reply(const admin_request& request)>;

  // Binds settings.listen, shared with other processes when `share_port`; throws std::runtime_error
  // when it cannot.
  admin_server(const admin_settings& settings, bool share_port, handler h);
  ~admin_server();  // stops and joins
  admin_server(const admin_server&) = delete;
  admin_server& operator=(const admin_server&) = delete;

  boost::asio::ip::tcp::endpoint local_endpoint() const;
  // Admin thread only (the handler may call it).
  admin_connection_counts connection_counts() const;
  // Runs `work` on the admin thread every `period` once started (the status page's samples). Call before
  // start(); `work` must not wait.
  void every(std::chrono::steady_clock::duration period, std::function<void()> work);
  void start();  // runs the admin thread
  // When another listener shares the port, drops new handshakes from now on (port_handoff.hpp).
  // Thread-safe.
  void hand_off_port();
  // Takes the connections waiting in the listen queue, then closes the listener; those open are served
  // on, without keep-alive. Thread-safe, idempotent.
  void stop_accepting();
  void stop();  // thread-safe, idempotent

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace gateway
