#include "gateway/downstream/connection_pool.hpp"

#include <algorithm>

namespace gateway {

namespace net = boost::asio;
using boost::system::error_code;

connection_pool::connection_pool(net::any_io_executor ex, std::shared_ptr<const resolved_address> address,
                                 std::size_t cap, microseconds connect_timeout, microseconds idle_timeout)
    : ex_(std::move(ex)),
      address_(std::move(address)),
      cap_(std::max<std::size_t>(cap, 1)),
      connect_timeout_(connect_timeout),
      idle_timeout_(idle_timeout) {}

connection_pool::acquire_result connection_pool::acquire(clock::time_point deadline, cancel_source& cancel,
                                                         bool fresh, net::yield_context yield) {
  const auto now = clock::now();
  while (!fresh && !idle_.empty()) {
    handle conn = std::move(idle_.back());
    idle_.pop_back();
    if (now - conn->last_used < idle_timeout_ && conn->stream.socket().is_open() && current(*conn))
      return {std::move(conn), {}};
    discard(std::move(conn));
  }
  if (fresh && !idle_.empty() && open_ + reserved_ >= cap_) {  // make room for the fresh one
    close(std::move(idle_.front()));
    idle_.erase(idle_.begin());
  }

  if (open_ + reserved_ >= cap_) {
    if (cancel.cancelled()) return {nullptr, net::error::operation_aborted};
    net::steady_timer timer(ex_);
    timer.expires_at(deadline);
    waiter w{&timer, nullptr, false};
    waiters_.push_back(&w);
    error_code ec;
    {
      auto hook = cancel.on_cancel([&timer] { timer.cancel(); });
      timer.async_wait(yield[ec]);
    }
    waiters_.erase(std::remove(waiters_.begin(), waiters_.end(), &w), waiters_.end());
    if (w.conn) {
      if (!cancel.cancelled()) return {std::move(w.conn), {}};
      release(std::move(w.conn));  // pass it on to the next waiter
      return {nullptr, net::error::operation_aborted};
    }
    if (!w.slot_freed) {
      return {nullptr, cancel.cancelled() ? error_code(net::error::operation_aborted)
                                          : error_code(net::error::timed_out)};
    }
    --reserved_;
    if (cancel.cancelled()) {
      if (!waiters_.empty()) wake_first_waiter(nullptr);  // the freed slot goes to the next waiter
      return {nullptr, net::error::operation_aborted};
    }
  }
  error_code ec;
  handle conn = connect(deadline, cancel, ec, yield);
  return {std::move(conn), ec};
}

connection_pool::handle connection_pool::connect(clock::time_point deadline, cancel_source& cancel,
                                                 error_code& ec, net::yield_context yield) {
  if (cancel.cancelled()) {
    ec = net::error::operation_aborted;
    return nullptr;
  }
  const auto generation = address_->generation();
  const auto endpoint = address_->get();
  if (!endpoint) {  // the name has not resolved yet
    ec = net::error::host_not_found;
    discard(nullptr);  // a slot handed to this caller goes to the next waiter
    return nullptr;
  }
  ++open_;
  auto conn = std::make_unique<connection>(ex_);
  conn->generation = generation;
  conn->stream.expires_at(std::min(deadline, clock::now() + connect_timeout_));
  {
    auto hook = cancel.on_cancel([s = &conn->stream] { s->cancel(); });
    conn->stream.async_connect(*endpoint, yield[ec]);
  }
  if (!ec && cancel.cancelled()) ec = net::error::operation_aborted;
  if (ec) {
    discard(std::move(conn));
    return nullptr;
  }
  error_code ignored;
  conn->stream.socket().set_option(net::ip::tcp::no_delay(true), ignored);
  return conn;
}

void connection_pool::release(handle conn) {
  // Closed by a cancellation that raced the exchange's end, or opened to an address no longer current.
  if (!conn->stream.socket().is_open() || !current(*conn)) {
    discard(std::move(conn));
    return;
  }
  conn->reused = true;
  conn->last_used = clock::now();
  conn->stream.expires_never();
  if (!waiters_.empty()) {
    wake_first_waiter(std::move(conn));
    return;
  }
  idle_.push_back(std::move(conn));
}

void connection_pool::close(handle conn) {
  error_code ignored;
  conn->stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  conn->stream.close();
  --open_;
}

void connection_pool::discard(handle conn) {
  if (conn) close(std::move(conn));
  if (!waiters_.empty() && open_ + reserved_ < cap_) wake_first_waiter(nullptr);
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
