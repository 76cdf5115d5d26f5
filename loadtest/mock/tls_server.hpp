#pragma once
// The mock's HTTPS endpoints: the server's TLS context (certificate and key, TLS 1.2 and up, and for
// mutual TLS the CA that a client's certificate must be signed by: a client without one fails the
// handshake) and, per accepted connection, the handshake before the HTTP session runs over the stream.
// Sessions can be resumed (tickets, and a session id context so that resumption works with client
// certificates too); /__stats counts handshakes and resumptions.

#include "loadtest/mock/path_registry.hpp"
#include "loadtest/mock/tls_options.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/spawn.hpp>

#include <memory>

namespace boost::asio::ssl {
class context;
}

namespace mock {

class tls_server {
 public:
  // Loads the files; throws std::runtime_error naming the one that does not load.
  explicit tls_server(const tls_options& options);
  tls_server(const tls_server&) = delete;
  tls_server& operator=(const tls_server&) = delete;
  ~tls_server();

  // Runs one accepted connection on its executor: the handshake (within 10 s), then the session. A failed
  // handshake ends the connection without a session (nor a count).
  void serve(boost::asio::ip::tcp::socket socket, path_registry& registry, std::size_t endpoint,
             const boost::asio::yield_context& yield);

 private:
  std::unique_ptr<boost::asio::ssl::context> context_;
};

}  // namespace mock
