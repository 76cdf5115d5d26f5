#include "gateway/server/acceptor.hpp"

#include "gateway/server/port_handoff.hpp"

#include "gateway/server/request_handler.hpp"
#include "gateway/server/response_head.hpp"
#include "gateway/server/session.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace gateway {

namespace net = boost::asio;
using boost::system::error_code;

namespace {

// An accepted descriptor on its way to its I/O thread: closed if it never gets there (e.g. the thread
// stopped before the hand-off ran).
struct accepted_fd {
  int fd = -1;
  explicit accepted_fd(int f) : fd(f) {}
  accepted_fd(accepted_fd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  accepted_fd(const accepted_fd&) = delete;
  accepted_fd& operator=(const accepted_fd&) = delete;
  accepted_fd& operator=(accepted_fd&&) = delete;
  ~accepted_fd() {
    if (fd >= 0) ::close(fd);
  }
};

// A client's address as the key of its connection count (IPv4 as IPv4-mapped IPv6).
client_slots::address address_key(const sockaddr_storage& peer) {
  client_slots::address a{};
  if (peer.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(peer);
    std::memcpy(a.data(), &in6.sin6_addr, 16);
  } else if (peer.ss_family == AF_INET) {
    const auto& in4 = reinterpret_cast<const sockaddr_in&>(peer);
    a[10] = a[11] = 0xff;
    std::memcpy(a.data() + 12, &in4.sin_addr, 4);
  }
  return a;
}

// The answer to a connection beyond the limits, written without waiting; with a request id of its own
// (no request was read), as every error answer of the gateway's.
std::string overloaded_response() {
  const auto r = error_response(503, "overloaded: too many connections", make_request_id({}));
  return serialize({.status = r.status,
                    .content_type = "application/json",
                    .content_length = r.body.size(),
                    .request_id = r.request_id,
                    .retry_after = true,
                    .keep_alive = false}) +
         r.body;
}

}  // namespace

acceptor::acceptor(const gateway_config& config, server_state& state, std::vector<io_thread> threads)
    : config_(config), state_(state), threads_(std::move(threads)), listener_(*threads_.front().ioc) {
  per_client_.set_cap(config.limits.max_connections_per_client);
  const auto& listen = config.server.listen;
  error_code ec;
  const auto address = net::ip::make_address(listen.host, ec);
  if (ec) throw std::runtime_error("server.listen: invalid address '" + listen.host + "'");
  const net::ip::tcp::endpoint endpoint(address, listen.port);
  protocol_ = endpoint.protocol();
  listener_.open(endpoint.protocol());
  listener_.set_option(net::socket_base::reuse_address(true));
  if (config.server.reuse_port) {
    using reuse_port = net::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>;
    listener_.set_option(reuse_port(true));
  }
  listener_.bind(endpoint, ec);
  if (ec)
    throw std::runtime_error("cannot listen on " + listen.host + ":" + std::to_string(listen.port) + ": " +
                             ec.message());
  listener_.listen(net::socket_base::max_listen_connections);
}

void acceptor::start() {
  net::spawn(
      *threads_.front().ioc, [this](net::yield_context yield) { accept_loop(yield); },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
}

bool acceptor::hand_off_port() {
  return listener_.is_open() && port_handoff::hand_off(listener_.native_handle());
}

// Connections that completed their handshake but wait in the listener's queue would be reset by the
// close: they are taken first and served (each its one request, the drain then closes it). When the port
// is shared, hand_off_port() ran port_handoff_lead before, so nothing can still be arriving; a listener
// alone on its port takes connections up to its close, and what arrives between the last accept and the
// close is reset (no other listener could take it anyway).
void acceptor::close() {
  if (listener_.is_open()) {
    for (;;) {
      sockaddr_storage peer{};
      socklen_t peer_size = sizeof peer;
      const int fd = ::accept4(listener_.native_handle(), reinterpret_cast<sockaddr*>(&peer), &peer_size,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
        break;  // nothing more waiting (or an error: the close comes anyway)
      }
      admit(fd, peer);
    }
  }
  error_code ignored;
  listener_.close(ignored);
}

// Accepts with accept4 on the listening socket when epoll reports it, every waiting connection each time
// (the next one raises a new edge). A connection over the limit is answered and closed right there; the
// others go to the I/O threads in turn, each registering its own socket. No socket is then touched by a
// thread other than its own, which is what lets the I/O contexts run without reactor I/O locks
// (BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO).
void acceptor::accept_loop(net::yield_context yield) {
  net::steady_timer backoff(yield.get_executor());
  error_code ec;
  listener_.non_blocking(true, ec);
  while (!state_.closing() && listener_.is_open()) {  // (closing: stopping too)
    sockaddr_storage peer{};
    socklen_t peer_size = sizeof peer;
    const int fd = ::accept4(listener_.native_handle(), reinterpret_cast<sockaddr*>(&peer), &peer_size,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == EINTR || err == ECONNABORTED || err == EPROTO) continue;  // that client is gone: next
      if (err == EAGAIN || err == EWOULDBLOCK) {
        listener_.async_wait(net::socket_base::wait_read, yield[ec]);
      } else {
        spdlog::warn("accept failed: {}", std::strerror(err));
        backoff.expires_after(milliseconds(50));  // e.g. out of file descriptors: don't spin
        backoff.async_wait(yield[ec]);
      }
      if (ec == net::error::operation_aborted) return;  // the listener closed
      continue;
    }
    if (state_.stopping()) {
      ::close(fd);
      return;
    }
    admit(fd, peer);
    if (state_.closing()) return;
    // Let what is queued on this thread run before the next accept, as one accept per wake-up would:
    // taking a whole backlog at once starts every new client's downstream connects in one burst, and a
    // downstream's SYN backlog overflows sooner (connects then wait for the SYN to be sent again).
    net::post(yield);
  }
}

// An accepted connection: refused at a cap, else handed to the next I/O thread.
void acceptor::admit(int fd, const sockaddr_storage& peer) {
  if (state_.connections.load(std::memory_order_relaxed) >= config_.limits.max_connections) {
    refuse(fd, shed_reason::max_connections);
    return;
  }
  const auto client = address_key(peer);
  if (!per_client_.take(client)) {
    refuse(fd, shed_reason::max_connections_per_client);
    return;
  }
  state_.connections.fetch_add(1, std::memory_order_relaxed);
  const std::size_t index = next_thread_;
  next_thread_ = (next_thread_ + 1) % threads_.size();
  try {
    spawn_session(index, fd, client);
  } catch (const std::exception& e) {
    // No memory or no stack mapping for one more connection: that client is refused, the gateway
    // goes on (its descriptor was closed with the coroutine's function object).
    state_.connections.fetch_sub(1, std::memory_order_relaxed);
    per_client_.give(client);
    spdlog::warn("cannot start a connection: {}", e.what());
    threads_.front().session.metrics->shed(shed_reason::max_connections);
  }
}

// A connection refused at the door: a 503 written without waiting, then closed; never registered with
// any reactor.
void acceptor::refuse(int fd, shed_reason why) {
  threads_.front().session.metrics->shed(why);
  const auto answer = overloaded_response();
  [[maybe_unused]] const auto sent = ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

// The connection's coroutine on I/O thread `index`. Throws when it cannot be started (the descriptor is
// closed then).
void acceptor::spawn_session(std::size_t index, int fd, const client_slots::address& client) {
  const io_thread& thread = threads_[index];
  net::spawn(
      thread.ioc->get_executor(), std::allocator_arg,
      boost::context::protected_fixedsize_stack(config_.server.stack_bytes()),
      [this, &thread, client, owned = accepted_fd(fd)](net::yield_context yield) mutable {
        struct slot_release {  // gives the client's slot back however the connection ends
          client_slots& slots;
          const client_slots::address& address;
          ~slot_release() { slots.give(address); }
        } release{per_client_, client};
        net::ip::tcp::socket socket(*thread.ioc);
        error_code assign_ec;
        socket.assign(protocol_, owned.fd, assign_ec);
        if (assign_ec) {
          spdlog::warn("cannot register an accepted connection: {}", assign_ec.message());
          state_.connections.fetch_sub(1, std::memory_order_relaxed);
          return;  // `owned` closes it
        }
        owned.fd = -1;  // the socket owns it now
        run_session(std::move(socket), thread.session, yield);
      },
      [](std::exception_ptr e) {
        if (!e) return;
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          spdlog::error("connection ended with an exception: {}", ex.what());
        }
      });
}

}  // namespace gateway
