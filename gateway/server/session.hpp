#pragma once
// One client connection: a flat loop in one stackful coroutine on one I/O thread (the io_context of that
// thread is single-threaded, so the connection is implicitly on its own strand). Read a request under
// the idle/header timeouts and size limits, answer it, repeat while keep-alive. Malformed HTTP gets a
// 400 and the connection closed. While a request is being handled, the client closing the connection
// cancels all of its downstream calls and nothing is written. With server.tls the same loop runs over
// TLS (tls_client_io) after the handshake, which must finish within limits.header_timeout.

#include "gateway/server/session_context.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/spawn.hpp>

namespace gateway {

// Runs the connection to its end, then closes the socket. `ctx.state->connections` counts the connection
// from the accept; this counts it down when it ends.
void run_session(boost::asio::ip::tcp::socket socket, const session_context& ctx,
                 boost::asio::yield_context yield);

}  // namespace gateway
