#pragma once
// The public listener. I/O thread 0 accepts; each accepted connection is handed to the I/O threads in
// turn, where its session runs. A connection beyond limits.max_connections or
// limits.max_connections_per_client is answered 503 and closed at once, never registered with any
// reactor. Beast-free.

#include "gateway/config/config.hpp"
#include "gateway/server/client_slots.hpp"
#include "gateway/server/server_state.hpp"
#include "gateway/server/session_context.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/spawn.hpp>

#include <sys/socket.h>

#include <vector>

namespace gateway {

class acceptor {
 public:
  // Where connections go: an I/O thread's io_context and what its sessions use.
  struct io_thread {
    boost::asio::io_context* ioc = nullptr;
    session_context session;
  };

  // Binds and listens on server.listen, on `threads[0]`; throws std::runtime_error when it cannot.
  // `config` and `state` (and what `threads` points to) outlive this.
  acceptor(const gateway_config& config, server_state& state, std::vector<io_thread> threads);

  boost::asio::ip::tcp::endpoint local_endpoint() const { return listener_.local_endpoint(); }
  // Spawns the accept loop on I/O thread 0. It ends when the listener closes; an exception escaping it
  // is a bug and is rethrown from that thread's run(), so that a gateway that no longer accepts dies.
  void start();
  // When another listener shares the port (a restart), drops new handshakes from now on, so that the
  // close resets none (port_handoff.hpp); returns whether it did. On I/O thread 0.
  bool hand_off_port();
  // Closes the listener; on I/O thread 0.
  void close();

 private:
  void accept_loop(boost::asio::yield_context yield);
  void admit(int fd, const sockaddr_storage& peer);
  void refuse(int fd, shed_reason why);
  void spawn_session(std::size_t index, int fd, const client_slots::address& client);

  const gateway_config& config_;
  server_state& state_;
  std::vector<io_thread> threads_;
  boost::asio::ip::tcp::acceptor listener_;
  boost::asio::ip::tcp protocol_ = boost::asio::ip::tcp::v4();  // the listener's
  client_slots per_client_;                                     // limits.max_connections_per_client
  std::size_t next_thread_ = 0;
};

}  // namespace gateway
