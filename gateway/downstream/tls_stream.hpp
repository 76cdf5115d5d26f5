#pragma once
// The TLS layer of a pooled connection to an https downstream (connection_pool::connection::tls): Asio's
// ssl::stream over the connection's own TCP socket, held by reference, so that connecting, the idle
// watch and closing stay the socket's as on a plain connection. Made after the TCP connect from the
// downstream's shared context (tls_client_context); destroyed with the connection, before its socket.
// Include only from the files that make or use the stream: it pulls in Asio's SSL headers.

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>

namespace gateway {

struct tls_stream {
  tls_stream(boost::asio::ip::tcp::socket& socket, boost::asio::ssl::context& context)
      : stream(socket, context) {}

  boost::asio::ssl::stream<boost::asio::ip::tcp::socket&> stream;
};

}  // namespace gateway
