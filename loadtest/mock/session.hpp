#pragma once
// One keep-alive HTTP/1.1 connection of the mock: read a request, act on it, repeat. Runs as a spawned
// coroutine on the socket's executor (single-threaded io_context, no strand needed). Network errors end
// the session quietly; a client that closes the connection while its request is being answered is
// counted as a cancellation. `endpoint` is the index of the listener that accepted the connection.

#include "loadtest/mock/path_registry.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/spawn.hpp>

namespace boost::asio::ssl {
template <typename Stream>
class stream;
}

namespace mock {

void run_session(boost::asio::ip::tcp::socket socket, path_registry& registry, std::size_t endpoint,
                 const boost::asio::yield_context& yield);
// The same over TLS, the handshake done (tls_server.hpp).
void run_session(boost::asio::ssl::stream<boost::asio::ip::tcp::socket> stream, path_registry& registry,
                 std::size_t endpoint, const boost::asio::yield_context& yield);

}  // namespace mock
