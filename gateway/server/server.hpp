#pragma once
// The gateway process: I/O threads (one single-threaded io_context each), the public listener, the
// downstreams, the request handler, the admin listener (probes, metrics, config) and the access log.
// Beast-free header.

#include "gateway/config/config.hpp"
#include "gateway/server/admin.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <functional>
#include <memory>

namespace gateway {

class server {
 public:
  // Builds everything and binds the listener; throws std::runtime_error on failure (bad address,
  // port in use, unresolvable downstream).
  // `version`: config_version() of the file's text (empty: one of the effective configuration).
  explicit server(const gateway_config& config, const std::string& version = {});
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  boost::asio::ip::tcp::endpoint local_endpoint() const;
  boost::asio::ip::tcp::endpoint admin_endpoint() const;
  std::size_t threads() const;

  // Runs the I/O threads (the calling thread is one of them) until stop() and the work has drained.
  // `on_started` runs once the gateway is started (/startupz answers 200), before serving begins.
  void run(const std::function<void()>& on_started = {});
  // Graceful drain (first SIGTERM): /readyz turns 503 at once; after shutdown.drain_delay the listener
  // closes, kept-alive connections get "Connection: close", idle ones are closed; when the last
  // connection has gone, or shutdown.timeout after the drain began, stop(). Thread-safe, idempotent.
  void drain();
  // Thread-safe and idempotent: stops accepting, cancels in-flight requests, closes connections.
  void stop();
  // Reads the configuration file again (config.source) and applies it when it is valid: new requests take
  // the new routes and downstreams at once, running ones finish on theirs; downstreams whose settings did
  // not change are kept with their connections, breakers and caches. Invalid: the running configuration
  // stays and the report has every error. Thread-safe (one reload at a time); returns when done. Also run
  // on a change of the file (server.watch_config) and by POST /reload on the admin listener.
  reload_report reload();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace gateway
