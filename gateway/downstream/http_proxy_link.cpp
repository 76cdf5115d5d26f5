// http_downstream's pass-through connections (proxy_link): an endpoint picked by the I/O thread's lane like
// an attempt's, a connection from its pool (an idle one, a new one, or a place in its queue), and the bytes
// of one exchange through it, each wait under a timer. The pool and the lane count the lease like an
// attempt: in flight until finish(), then judged for ejection and the endpoint's breaker.

#include "gateway/downstream/failure_rule.hpp"
#include "gateway/downstream/http_downstream.hpp"
#include "gateway/downstream/http_endpoints.hpp"
#include "gateway/downstream/http_result.hpp"
#include "gateway/downstream/tls_stream.hpp"
#include "gateway/tls/tls_client_context.hpp"

#include <openssl/ssl.h>
#include <boost/asio/write.hpp>

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cerrno>
#include <optional>
#include <utility>

namespace gateway {

namespace net = boost::asio;
using boost::system::error_code;

namespace {

// The link reads with Asio's own operations: the readiness watch a pooled connection keeps is told too,
// and its reports are dropped while the link holds the connection (the pool watches it again once back).
struct input_read_by_link final : read_readiness::listener {
  void on_readable(const error_code&) override {}
};
input_read_by_link read_by_link;

class pooled_link final : public proxy_link {
 public:
  pooled_link(http_endpoints& lane, http_endpoints::endpoint& to, const circuit_breaker::ticket& ticket,
              cancel_source& cancel)
      : lane_(lane),
        to_(to),
        ticket_(ticket),
        cancel_(cancel),
        timer_(lane.executor()),
        alive_(std::make_shared<pooled_link*>(this)) {}
  pooled_link(const pooled_link&) = delete;
  pooled_link& operator=(const pooled_link&) = delete;
  ~pooled_link() override {
    *alive_ = nullptr;
    if (!finished_) finish(false, true);
  }

  // A connection: idle, new, or handed over by the pool's queue; false with `why` when none by `ready_by`.
  bool acquire(const lease_request& request, net::yield_context yield, lease_failure& why);

  io_result write(std::string_view first, std::string_view second, clock::time_point until,
                  net::yield_context yield) override {
    std::size_t done = 0;
    just_wrote_ = true;
    if (!conn_->tls && !cancel_.cancelled()) {
      // What the socket takes at once needs no asynchronous operation (nor a switch of coroutines).
      std::array<iovec, 2> iov{{{const_cast<char*>(first.data()), first.size()},
                                {const_cast<char*>(second.data()), second.size()}}};
      msghdr msg{};
      msg.msg_iov = iov.data();
      msg.msg_iovlen = second.empty() ? 1 : 2;
      ssize_t n = 0;
      do {
        n = ::sendmsg(conn_->socket.native_handle(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      } while (n < 0 && errno == EINTR);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return {0, status::failed};
      done = static_cast<std::size_t>(std::max<ssize_t>(n, 0));
      if (done == first.size() + second.size()) return {done, status::ok};
    }
    const std::array<net::const_buffer, 2> pieces{
        net::buffer(first.data(), first.size()) + std::min(done, first.size()),
        net::buffer(second.data(), second.size()) + (done > first.size() ? done - first.size() : 0)};
    auto r = run(until, [&](error_code& ec) {
      return conn_->tls ? net::async_write(conn_->tls->stream, pieces, yield[ec])
                        : net::async_write(conn_->socket, pieces, yield[ec]);
    });
    r.bytes += done;
    return r;
  }

  io_result read_some(char* out, std::size_t max, clock::time_point until,
                      net::yield_context yield) override {
    // Right after a write the answer cannot be there yet: no read that would find nothing (Asio's own
    // operation tries one first anyway).
    if (!conn_->tls && !cancel_.cancelled() && !std::exchange(just_wrote_, false)) {
      // What is there already is taken without an asynchronous operation.
      ssize_t n = 0;
      do {
        n = ::recv(conn_->socket.native_handle(), out, max, MSG_DONTWAIT);
      } while (n < 0 && errno == EINTR);
      if (n > 0) return {static_cast<std::size_t>(n), status::ok};
      if (n == 0) return {0, status::eof};
      if (errno != EAGAIN && errno != EWOULDBLOCK) return {0, status::failed};
    }
    auto r = run(until, [&](error_code& ec) {
      return conn_->tls ? conn_->tls->stream.async_read_some(net::buffer(out, max), yield[ec])
                        : conn_->socket.async_read_some(net::buffer(out, max), yield[ec]);
    });
    // TLS 1.3 tickets come after the handshake: a new connection's first reads have them.
    if (conn_->tls && !conn_->reused) conn_->pool.keep_tls_session(conn_->tls->stream.native_handle());
    return r;
  }

  void finish(bool reusable, bool failed) override {
    assert(!finished_);
    finished_ = true;
    const auto now = clock::now();
    if (conn_) {
      auto& pool = conn_->pool;
      if (reusable && !failed && quiet(*conn_)) {
        pool.release(std::move(conn_), now);
      } else {
        pool.discard(std::move(conn_));
      }
    }
    lane_.attempt_ended(to_, ticket_, failed, !failed, now);
  }

  void answered_without_body() override {
    if (conn_) conn_->check_before_reuse = true;
  }

  bool reused() const override { return conn_ && conn_->reused; }
  boost::asio::ip::tcp::endpoint remote() const override { return to_.address; }

 private:
  // Runs one operation of the connection's (`op` yields) under the timer for `until` and the exchange's
  // cancellation; either closes nothing but cancels the socket's operations.
  template <class Op>
  io_result run(clock::time_point until, Op&& op) {
    if (cancel_.cancelled()) return {0, status::cancelled};
    if (!conn_) return {0, status::failed};
    timed_out_ = false;
    due_ = until;
    waiting_ = true;
    arm_timer();
    cancel_source::scoped_hook hook(cancel_, [this] {
      error_code ignored;
      if (conn_) conn_->socket.cancel(ignored);
    });
    error_code ec;
    const std::size_t bytes = op(ec);
    waiting_ = false;  // the timer stays set: the next wait, due later, mostly finds it set already
    if (!ec) return {bytes, status::ok};
    if (timed_out_) return {bytes, status::timed_out};
    if (cancel_.cancelled()) return {bytes, status::cancelled};
    if (ec == net::error::eof) return {bytes, status::eof, ec};
    return {bytes, status::failed, ec};
  }

  // The timer is set for the current wait's end only when it is not set already for an earlier time (the
  // waits' ends mostly move later: idle timeouts); set early, it sets itself again when it fires. So a
  // stream of reads and writes costs a timer operation per idle_timeout, not one per wait.
  void arm_timer() {
    if (timer_set_ && timer_at_ <= due_) return;
    timer_set_ = true;
    timer_at_ = due_;
    timer_.expires_at(due_);  // replaces a later setting (its handler runs as aborted)
    timer_.async_wait([alive = alive_, turn = ++turns_](const error_code& ec) {
      if (*alive == nullptr) return;
      auto& self = **alive;
      if (self.turns_ != turn) return;  // replaced by a later setting
      self.timer_set_ = false;
      if (ec || !self.waiting_) return;
      if (clock::now() < self.due_) return self.arm_timer();
      self.timed_out_ = true;
      error_code ignored;
      self.conn_->socket.cancel(ignored);
    });
  }

  bool connect(clock::time_point until, net::yield_context yield, lease_failure& why);
  // A failed connect or handshake step: `why` from how it ended; false.
  static bool step_failed(const io_result& r, const char* timed_out_text, const char* failed_text,
                          lease_failure& why) {
    using kind = lease_failure::kind;
    why = r.how == status::timed_out   ? lease_failure{kind::timed_out, timed_out_text}
          : r.how == status::cancelled ? lease_failure{kind::cancelled, "cancelled"}
                                       : lease_failure{kind::failed, failed_text, error_kind(r.ec)};
    return false;
  }

  // Nothing is waiting on the connection: no bytes past the answer, and no end of stream that came with
  // it (it raised its edge before the pool's watch was queued again: the watch would never report it).
  // Over TLS, nothing either that the TLS layer has read already: a record of its own behind the answer
  // (decrypted or not) would be the next exchange's first read.
  static bool quiet(connection_pool::connection& conn) {
    if (conn.tls) {
      SSL* ssl = conn.tls->stream.native_handle();
      if (SSL_has_pending(ssl) == 1 || BIO_ctrl_pending(SSL_get_rbio(ssl)) != 0) return false;
    }
    char byte = 0;
    ssize_t n = 0;
    do {
      n = ::recv(conn.socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }

  http_endpoints& lane_;
  http_endpoints::endpoint& to_;
  circuit_breaker::ticket ticket_;
  cancel_source& cancel_;
  net::steady_timer timer_;
  connection_pool::handle conn_;
  std::uint64_t turns_ = 0;  // numbers the timer's settings, for a handler of a replaced one
  clock::time_point due_{};  // the current wait's end
  clock::time_point timer_at_{};
  bool timer_set_ = false;
  bool waiting_ = false;     // a wait is running (the timer's handler ends it at due_)
  bool just_wrote_ = false;  // the last operation was a write
  bool timed_out_ = false;
  bool finished_ = false;
  std::shared_ptr<pooled_link*> alive_;  // null once destroyed: the timer's handler may still be queued
};

bool pooled_link::acquire(const lease_request& request, net::yield_context yield, lease_failure& why) {
  const lease_failure cancelled{lease_failure::kind::cancelled, "cancelled"};
  const lease_failure busy{lease_failure::kind::busy, "no connection to the downstream free in time"};
  auto& pool = to_.pool;
  if (!request.fresh) {
    while (auto conn = pool.take_idle(clock::now())) {
      if (conn->stale || (conn->check_before_reuse && !quiet(*conn))) {
        pool.discard(std::move(conn));
        continue;
      }
      conn->check_before_reuse = false;
      conn_ = std::move(conn);
      conn_->user = &read_by_link;
      return true;
    }
  }
  if (!pool.reserve_slot(request.fresh)) {
    // At the pool's cap: wait in its queue for a connection or a slot, by ready_by.
    net::steady_timer timer(pool.executor(), request.ready_by);
    connection_pool::waiter waiter{&timer, nullptr, false};
    pool.enqueue(waiter);
    {
      cancel_source::scoped_hook hook(cancel_, [&timer] { timer.cancel(); });
      error_code ignored;
      if (!cancel_.cancelled()) timer.async_wait(yield[ignored]);
    }
    pool.dequeue(waiter);
    if (waiter.conn && !waiter.conn->stale && waiter.conn->check_before_reuse && !quiet(*waiter.conn))
      waiter.conn->stale = true;
    if (waiter.conn && !cancel_.cancelled() && !waiter.conn->stale) {
      waiter.conn->check_before_reuse = false;
      conn_ = std::move(waiter.conn);
      conn_->user = &read_by_link;
      return true;
    }
    if (waiter.conn && waiter.conn->stale) {  // closed while handed over: its slot for a new one
      pool.discard(std::move(waiter.conn));
      if (cancel_.cancelled() || !pool.reserve_slot(false)) {
        why = cancel_.cancelled() ? cancelled : busy;
        return false;
      }
    } else if (waiter.conn) {  // cancelled: the connection goes on to the next waiter
      pool.release(std::move(waiter.conn), clock::now());
      why = cancelled;
      return false;
    } else if (!waiter.slot_freed) {
      why = cancel_.cancelled() ? cancelled : busy;
      return false;
    } else {
      pool.claim_freed_slot();
      if (cancel_.cancelled()) {
        pool.release_slot();
        why = cancelled;
        return false;
      }
    }
  }
  conn_ = pool.open();
  return connect(request.ready_by, yield, why);
}

bool pooled_link::connect(clock::time_point until, net::yield_context yield, lease_failure& why) {
  auto r = run(until, [&](error_code& ec) {
    conn_->socket.async_connect(conn_->remote, yield[ec]);
    return std::size_t{0};
  });
  if (!r.ok()) return step_failed(r, "connect timed out", "connect failed", why);
  conn_->pool.connected(*conn_);
  error_code ignored;
  conn_->socket.set_option(net::ip::tcp::no_delay(true), ignored);
  report_input_left(conn_->socket);
  conn_->user = &read_by_link;
  if (!conn_->readiness.waiting())
    conn_->readiness.wait(*conn_);  // the pool's watch, from connect to close, as on an attempt's connection
  auto& pool = conn_->pool;
  if (pool.tls() == nullptr) return true;
  const auto& context = *pool.tls();
  conn_->tls = std::make_unique<tls_stream>(conn_->socket, context.native());
  SSL* ssl = conn_->tls->stream.native_handle();
  if (!context.prepare(ssl)) {
    why = {lease_failure::kind::failed, "TLS setup failed", call_error::tls};
    return false;
  }
  if (SSL_SESSION* session = pool.tls_session()) SSL_set_session(ssl, session);
  r = run(until, [&](error_code& ec) {
    conn_->tls->stream.async_handshake(net::ssl::stream_base::client, yield[ec]);
    return std::size_t{0};
  });
  if (!r.ok()) {
    step_failed(r, "TLS handshake timed out", "TLS handshake failed", why);
    if (why.what == lease_failure::kind::failed) why.error = call_error::tls;
    return false;
  }
  pool.count_handshake(SSL_session_reused(ssl) == 1);
  return true;
}

}  // namespace

std::unique_ptr<proxy_link> http_downstream::lease(const lease_request& request, net::yield_context yield,
                                                   lease_failure& why) {
  auto& lane = *lanes_.at(request.thread_index);
  const auto choice = lane.pick(clock::now(), nullptr);
  if (choice.to == nullptr) {
    why = choice.refused ? lease_failure{lease_failure::kind::circuit_open, "circuit open"}
                         : lease_failure{lease_failure::kind::failed, "downstream address not resolved yet"};
    return nullptr;
  }
  auto link = std::make_unique<pooled_link>(lane, *choice.to, choice.ticket, *request.cancel);
  if (!link->acquire(request, yield, why)) {
    // A connect (or TLS handshake) that failed or timed out: the endpoint's failure when the failure rule
    // counts connect failures; never when the pool was only busy (the gateway's own queueing), or the
    // exchange was cancelled.
    const bool connect_failed =
        why.what == lease_failure::kind::failed || why.what == lease_failure::kind::timed_out;
    link->finish(false, connect_failed && counts_as_failure(settings_.breaker.failures, call_outcome::timeout,
                                                            call_error::connect_timeout, 0));
    return nullptr;
  }
  return link;
}

}  // namespace gateway
