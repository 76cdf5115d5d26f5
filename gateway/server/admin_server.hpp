#pragma once
// The admin listener: a small HTTP/1.1 server on its own port and its own thread, so that probes and
// scrapes stay fast and correct while the public port is saturated. What each request gets is up to the
// handler, called on the admin thread; the server answers HEAD with the head of its GET. Beast-free header.

#include "gateway/config/config.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <chrono>
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

class admin_server {
 public:
  using handler = std::function<admin_reply(const admin_request& request)>;

  // Binds the listener; throws std::runtime_error when it cannot.
  admin_server(const listen_address& listen, handler h);
  ~admin_server();  // stops and joins
  admin_server(const admin_server&) = delete;
  admin_server& operator=(const admin_server&) = delete;

  boost::asio::ip::tcp::endpoint local_endpoint() const;
  // Runs `work` on the admin thread every `period` once started (the status page's samples). Call before
  // start(); `work` must not wait.
  void every(std::chrono::steady_clock::duration period, std::function<void()> work);
  void start();  // runs the admin thread
  void stop();   // thread-safe, idempotent

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace gateway
