#pragma once
// The client connection's I/O over TLS, with the operations of client_io (see there) so that one session
// loop serves both: read_request() under the idle and header timeouts, send() under the write timeout,
// watch_peer() / stop_watch() around a request's handling, peer_closed(), buffered(), release_buffer();
// plus the two ends of a TLS connection: handshake() (within a deadline) and close() (close_notify).
//
// Asio's ssl::stream over the session's own TCP socket, held by reference, so that the session registry
// cancels and closes a TLS connection through its socket as it does a plain one. Input is read by one
// read at a time, kept in flight from watch_peer() until the next read_request() takes its result: it
// serves as the watch for the client going away while a request is handled (an end of stream, a reset
// or a TLS error calls `on_close` once; bytes, a pipelined request, end the watch quietly) and then as
// the wait for the next request. The read's completion holds the connection's TLS state, so it may end
// after this object (the socket closed under it). Everything runs on the socket's executor; cancelling
// the socket (drain, shutdown) ends any wait at once. The SSL headers stay in tls_client_io.cpp.

#include "gateway/runtime/duration.hpp"
#include "gateway/server/client_io.hpp"
#include "gateway/tls/tls_server_context.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/spawn.hpp>

#include <functional>
#include <memory>
#include <string_view>

namespace gateway {

class tls_client_io {
 public:
  using request_parser = client_io::request_parser;
  using read_result = client_io::read_result;

  // `context`: the listener's current one, kept by the connection for as long as it lives.
  tls_client_io(boost::asio::ip::tcp::socket& socket, std::shared_ptr<const tls_server_context> context,
                std::size_t buffer_limit);
  tls_client_io(const tls_client_io&) = delete;
  tls_client_io& operator=(const tls_client_io&) = delete;
  ~tls_client_io();

  // Why a handshake failed (none: it succeeded, or the socket was cancelled by a drain or shutdown).
  enum class handshake_failure { none, timeout, closed, protocol };
  // The server's side of the handshake, finished by `until`; false when it did not complete, `why` set.
  bool handshake(clock::time_point until, handshake_failure& why, boost::asio::yield_context yield);

  read_result read_request(request_parser& parser, clock::time_point idle_until,
                           clock::duration header_timeout, const std::function<void()>& on_first_byte,
                           boost::asio::yield_context yield, bool with_body = false);
  bool buffered() const;
  void release_buffer();

  // As client_io::read_body (pass-through routes).
  using body_parser = client_io::body_parser;
  using body_read = client_io::body_read;
  body_read read_body(body_parser& parser, char* out, std::size_t size, clock::time_point until,
                      boost::asio::yield_context yield);

  bool send(std::string_view head, std::string_view body, clock::duration write_timeout,
            boost::asio::yield_context yield);

  void watch_peer(std::function<void()> on_close);
  void stop_watch();
  bool peer_closed() const;

  // Sends close_notify (when the connection is still sound, within `write_timeout`), then closes the
  // socket; a read still in flight ends aborted.
  void close(clock::duration write_timeout, boost::asio::yield_context yield);

 private:
  struct connection;  // shared with the read in flight and the timer's handler
  std::shared_ptr<connection> conn_;
};

}  // namespace gateway
