#include "gateway/downstream/connection_pool.hpp"

#include "gateway/downstream/tls_stream.hpp"

#include <openssl/ssl.h>

#include <algorithm>
#include <utility>

namespace gateway {

namespace net = boost::asio;
using boost::system::error_code;

connection_pool::connection::connection(const net::any_io_executor& ex, connection_pool& owner)
    : socket(ex), readiness(socket), pool(owner) {}

connection_pool::connection::~connection() {
  error_code ignored;
  socket.close(ignored);
}

connection_pool::connection_pool(net::any_io_executor ex, const net::ip::tcp::endpoint& remote,
                                 std::size_t cap, microseconds connect_timeout, microseconds idle_timeout,
                                 const tls_client_context* tls, tls_handshake_counts* counts,
                                 std::size_t max_connecting)
    : ex_(std::move(ex)),
      remote_(remote),
      cap_(std::max<std::size_t>(cap, 1)),
      max_connecting_(std::max<std::size_t>(max_connecting, 1)),
      connect_timeout_(connect_timeout),
      idle_timeout_(idle_timeout),
      tls_(tls),
      counts_(counts) {}

connection_pool::~connection_pool() {
  SSL_SESSION_free(session_);  // accepts null
}

void connection_pool::keep_tls_session(SSL* ssl) {
  const SSL_SESSION* current = SSL_get0_session(ssl);
  if (current == nullptr || SSL_SESSION_is_resumable(current) != 1) return;  // TLS 1.3: no ticket yet
  // A copy: OpenSSL marks a connection's own session not resumable when the connection is freed without
  // a TLS shutdown, as every connection closed here is.
  if (SSL_SESSION* copy = SSL_SESSION_dup(current)) SSL_SESSION_free(std::exchange(session_, copy));
}

void connection_pool::count_handshake(bool resumed) {
  auto& counter = resumed ? counts_->resumed : counts_->full;
  counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

connection_pool::handle connection_pool::take_idle(clock::time_point now) {
  while (!idle_.empty()) {
    handle conn = std::move(idle_.back());
    idle_.pop_back();
    if (now - conn->last_used < idle_timeout_ && conn->socket.is_open() && !conn->stale) {
      return conn;
    }
    discard(std::move(conn));
  }
  return nullptr;
}

bool connection_pool::reserve_slot(bool fresh) {
  if (fresh && !idle_.empty() && open_ + reserved_ >= cap_) {  // make room for the fresh one
    close(std::move(idle_.front()));
    idle_.erase(idle_.begin());
  }
  if (open_ + reserved_ >= cap_ || connecting_ + reserved_ >= max_connecting_) return false;
  ++open_;
  return true;
}

void connection_pool::claim_freed_slot() {
  --reserved_;
  ++open_;
}

void connection_pool::release_slot() {
  --open_;
  if (!waiters_.empty() && room()) wake_first_waiter(nullptr);
}

connection_pool::handle connection_pool::open() {
  auto conn = std::make_unique<connection>(ex_, *this);
  conn->remote = remote_;
  conn->connecting = true;
  ++connecting_;
  return conn;
}

void connection_pool::connected(connection& conn) {
  if (!std::exchange(conn.connecting, false)) return;
  --connecting_;
  if (!waiters_.empty() && room()) wake_first_waiter(nullptr);
}

void connection_pool::dequeue(waiter& w) {
  waiters_.erase(std::remove(waiters_.begin(), waiters_.end(), &w), waiters_.end());
}

void connection_pool::release(handle conn, clock::time_point now) {
  // Closed by a cancellation that raced the exchange's end, or the address is no longer the downstream's.
  if (retired_ || !conn->socket.is_open() || conn->stale) {
    discard(std::move(conn));
    return;
  }
  conn->user = nullptr;
  if (!conn->readiness.waiting()) conn->readiness.wait(*conn);
  conn->reused = true;
  conn->last_used = now;
  if (!waiters_.empty()) {
    wake_first_waiter(std::move(conn));
    return;
  }
  idle_.push_back(std::move(conn));
}

void connection_pool::connection::on_readable(const error_code& ec) {
  if (user != nullptr) {
    user->on_readable(ec);
  } else {
    pool.idle_readable(*this);
  }
}

void connection_pool::idle_readable(connection& conn) {
  conn.stale = true;  // if a waiter holds it already, the call discards it
  const auto it = std::find_if(idle_.begin(), idle_.end(), [&](const handle& h) { return h.get() == &conn; });
  if (it == idle_.end()) return;
  handle stale = std::move(*it);
  idle_.erase(it);
  discard(std::move(stale));
}

void connection_pool::close(handle conn) {
  error_code ignored;
  conn->socket.shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  conn->socket.close(ignored);
  --open_;
  if (std::exchange(conn->connecting, false)) --connecting_;
}

void connection_pool::discard(handle conn) {
  if (conn) close(std::move(conn));
  if (!waiters_.empty() && room()) wake_first_waiter(nullptr);
}

void connection_pool::wake_first_waiter(handle conn) {
  if (waiters_.empty()) {
    if (conn) idle_.push_back(std::move(conn));
    return;
  }
  waiter* w = waiters_.front();
  waiters_.pop_front();
  if (conn) {
    w->conn = std::move(conn);
  } else {
    w->slot_freed = true;
    ++reserved_;
  }
  w->timer->cancel();
}

void connection_pool::close_idle() {
  while (!idle_.empty()) {
    handle conn = std::move(idle_.back());
    idle_.pop_back();
    discard(std::move(conn));
  }
}

}  // namespace gateway
