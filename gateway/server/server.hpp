#pragma once
// The gateway process: I/O threads (one single-threaded io_context each), the public listener, the
// downstreams and the request handler. Beast-free header.

#include "gateway/config/config.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <memory>

namespace gateway {

class server {
 public:
  // Builds everything and binds the listener; throws std::runtime_error on failure (bad address,
  // port in use, unresolvable downstream).
  explicit server(const gateway_config& config);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  boost::asio::ip::tcp::endpoint local_endpoint() const;
  std::size_t threads() const;

  // Runs the I/O threads (the calling thread is one of them) until stop() and the work has drained.
  void run();
  // Thread-safe and idempotent: stops accepting, cancels in-flight requests, closes connections.
  void stop();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace gateway
