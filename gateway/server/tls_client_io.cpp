#include "gateway/server/tls_client_io.hpp"
#include "gateway/server/request_framing.hpp"

#include "gateway/runtime/wake_event.hpp"

#include <openssl/ssl.h>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>

#include <algorithm>
#include <array>
#include <cassert>
#include <string>
#include <utility>

namespace gateway {

namespace net = boost::asio;
namespace ssl = net::ssl;
namespace http = boost::beast::http;
using boost::system::error_code;

namespace {

// An answer up to this size goes out as one TLS record with its head (one copy, one write); a larger
// body is written as it is, after the head.
constexpr std::size_t coalesce_limit = 16 * 1024;

// The longest wait to hand close_notify to a client at the end of a connection.
constexpr auto close_notify_limit = std::chrono::seconds(1);

bool end_of_stream(const error_code& ec) {
  return ec == net::error::eof || ec == ssl::error::stream_truncated;  // with close_notify, or without
}

}  // namespace

// The connection's TLS state. Owned by tls_client_io and by the read in flight (whose completion may come
// after tls_client_io is gone: the stream must outlive it); the timer's handler only looks it up.
struct tls_client_io::connection : std::enable_shared_from_this<connection> {
  connection(net::ip::tcp::socket& socket, std::shared_ptr<const tls_server_context> c, std::size_t limit)
      : context(std::move(c)),
        stream(socket, context->native()),
        buffer(limit),
        timer(socket.get_executor()) {}

  std::shared_ptr<const tls_server_context> context;  // before the stream: its SSL_CTX outlives the SSL
  ssl::stream<net::ip::tcp::socket&> stream;
  boost::beast::flat_buffer buffer;  // touched only while no read is in flight (the read fills its tail)
  net::steady_timer timer;           // a wait's end, or a handshake's or a write's timeout
  wake_event wake;                   // the coroutine waiting for the read in flight
  bool reading = false;              // a read is in flight
  bool read_done = false;            // a read has completed and its result (read_ec) is not taken yet
  error_code read_ec;
  bool timed_out = false;  // the timer fired during the current wait, handshake or write
  bool broken = false;     // a write failed or timed out, or the handshake did not complete: no close_notify
  bool watching = false;   // a request is being handled: the read in flight watches the client
  bool peer_gone = false;  // the client closed or reset while watched; final
  std::uint64_t timer_id = 0;  // numbers the timer's uses, for a handler that runs late
  std::function<void()> on_close;

  // Starts the read: false when the buffer has no room left.
  bool start_read() {
    assert(!reading && !read_done);
    const auto room = std::min(std::clamp<std::size_t>(buffer.capacity() - buffer.size(), 1024, 16384),
                               buffer.max_size() - buffer.size());
    if (room == 0) return false;
    reading = true;
    stream.async_read_some(buffer.prepare(room),
                           [self = shared_from_this()](const error_code& ec, std::size_t bytes) {
                             self->read_completed(ec, bytes);
                           });
    return true;
  }

  void read_completed(const error_code& ec, std::size_t bytes) {
    reading = false;
    read_done = true;
    read_ec = ec;
    buffer.commit(bytes);
    if (std::exchange(watching, false) && ec && ec != net::error::operation_aborted) {
      peer_gone = true;
      if (auto cb = std::exchange(on_close, nullptr)) cb();
    }
    if (wake.waiting()) wake.notify();
  }

  // Sets the timer for the current wait, handshake or write; at `until` it ends a wait, or (`cancel`)
  // cancels the socket's operations.
  void arm_timer(clock::time_point until, bool cancel) {
    timed_out = false;
    const auto id = ++timer_id;
    timer.expires_at(until);
    timer.async_wait([weak = weak_from_this(), id, cancel](const error_code& ec) {
      auto self = weak.lock();
      if (ec || !self || self->timer_id != id) return;
      self->timed_out = true;
      if (cancel) {
        self->broken = true;
        error_code ignored;
        self->stream.next_layer().cancel(ignored);
      } else if (self->wake.waiting()) {
        self->wake.notify();
      }
    });
  }
  void disarm_timer() {
    ++timer_id;
    timer.cancel();
  }

  // Waits for the read in flight until `until`: false when it timed out.
  bool wait_read(clock::time_point until, net::yield_context yield) {
    if (read_done) return true;
    arm_timer(until, false);
    while (!read_done && !timed_out) wake.wait(yield);
    disarm_timer();
    return read_done;
  }
};

tls_client_io::tls_client_io(net::ip::tcp::socket& socket, std::shared_ptr<const tls_server_context> context,
                             std::size_t buffer_limit)
    : conn_(std::make_shared<connection>(socket, std::move(context), buffer_limit)) {}

tls_client_io::~tls_client_io() {
  conn_->disarm_timer();
  conn_->on_close = nullptr;
  conn_->watching = false;
  if (conn_->reading) {  // normally close() did this already
    error_code ignored;
    conn_->stream.next_layer().close(ignored);
  }
}

bool tls_client_io::handshake(clock::time_point until, handshake_failure& why, net::yield_context yield) {
  auto& c = *conn_;
  c.arm_timer(until, true);
  error_code ec;
  c.stream.async_handshake(ssl::stream_base::server, yield[ec]);
  c.disarm_timer();
  why = handshake_failure::none;
  if (!ec) return true;
  c.broken = true;
  if (c.timed_out) {
    why = handshake_failure::timeout;
  } else if (end_of_stream(ec) || ec == net::error::connection_reset) {
    why = handshake_failure::closed;
  } else if (ec != net::error::operation_aborted) {
    why = handshake_failure::protocol;
  }
  return false;
}

tls_client_io::read_result tls_client_io::read_request(request_parser& parser, clock::time_point idle_until,
                                                       clock::duration header_timeout,
                                                       const std::function<void()>& on_first_byte,
                                                       net::yield_context yield, bool with_body) {
  auto& c = *conn_;
  // As on a plain connection: the head only unless `with_body` (a body ends the read with body_limit once
  // the head is parsed).
  parser.eager(with_body);
  bool started = c.buffer.size() > 0 && !c.reading;  // a pipelined request is already arriving
  auto until = idle_until;
  if (started) {
    on_first_byte();
    until = clock::now() + header_timeout;
  }
  fold_watch folds;  // an obs-fold in the head is refused
  for (;;) {
    if (c.buffer.size() > 0 && !c.reading) {
      error_code ec;
      const bool head_done = parser.is_header_done();
      const auto data = c.buffer.data();
      const auto taken = parser.put(data, ec);
      if (!head_done) folds.taken(static_cast<const char*>(data.data()), taken);
      c.buffer.consume(taken);
      if (folds.folded()) return {false, http::error::bad_field};
      if (parser.is_done()) return {true, {}};
      if (ec && ec != http::error::need_more) return {false, ec};
      if (parser.is_header_done() && !with_body) return {false, http::error::body_limit};
    }
    // The read in flight (the watch's, kept for this request), or a new one.
    if (!c.reading && !c.read_done && !c.start_read()) return {false, http::error::buffer_overflow};
    if (!c.wait_read(until, yield)) return {false, {}};  // timed out; the read stays in flight
    c.read_done = false;
    const auto ec = std::exchange(c.read_ec, {});
    if (end_of_stream(ec)) {  // a cut request is partial_message (no answer), none at all just ends
      if (!parser.got_some()) return {false, {}};
      error_code eof;
      parser.put_eof(eof);
      return {false, eof ? eof : error_code(http::error::partial_message)};
    }
    if (ec) return {false, {}};  // reset, a TLS error, or cancelled (drain, shutdown): nothing to answer
    if (!started && c.buffer.size() > 0) {
      started = true;
      on_first_byte();
      until = clock::now() + header_timeout;
    }
  }
}

tls_client_io::body_read tls_client_io::read_body(body_parser& parser, char* out, std::size_t size,
                                                  clock::time_point until, net::yield_context yield) {
  auto& c = *conn_;
  auto& body = parser.get().body();
  body.data = out;
  body.size = size;
  for (;;) {
    if (parser.is_done()) return {size - body.size, true, true, {}};
    if (c.buffer.size() > 0 && !c.reading) {
      error_code ec;
      c.buffer.consume(parser.put(c.buffer.data(), ec));
      const auto got = size - body.size;
      if (parser.is_done()) return {got, true, true, {}};
      if (ec && ec != http::error::need_more && ec != http::error::need_buffer)
        return {got, false, false, ec};
      if (got > 0 || body.size == 0) return {got, false, true, {}};
    }
    if (!c.reading && !c.read_done && !c.start_read()) return {0, false, false, http::error::buffer_overflow};
    if (!c.wait_read(until, yield)) return {0, false, false, {}};  // timed out
    c.read_done = false;
    const auto ec = std::exchange(c.read_ec, {});
    if (end_of_stream(ec)) return {0, false, false, http::error::partial_message};
    if (ec) return {0, false, false, {}};
  }
}

bool tls_client_io::buffered() const {
  return conn_->buffer.size() > 0 || SSL_pending(conn_->stream.native_handle()) > 0;
}

void tls_client_io::release_buffer() {
  auto& c = *conn_;
  if (c.buffer.size() == 0 && !c.reading) c.buffer.shrink_to_fit();
}

void tls_client_io::watch_peer(std::function<void()> on_close) {
  auto& c = *conn_;
  if (c.read_done) {  // the client's next bytes, or its leaving, arrived with this request
    if (c.read_ec && c.read_ec != net::error::operation_aborted) {
      c.peer_gone = true;
      on_close();
    }
    return;
  }
  // Bytes already here (a pipelined request): the client is still there, nothing to watch.
  if (c.buffer.size() > 0 || SSL_pending(c.stream.native_handle()) > 0) return;
  c.on_close = std::move(on_close);
  c.watching = true;
  if (!c.reading && !c.start_read()) c.watching = false;
}

void tls_client_io::stop_watch() {
  conn_->watching = false;  // the read stays in flight: it is the next request's
  conn_->on_close = nullptr;
}

bool tls_client_io::peer_closed() const {
  return conn_->peer_gone;
}

bool tls_client_io::send(std::string_view head, std::string_view body, clock::duration write_timeout,
                         net::yield_context yield) {
  auto& c = *conn_;
  // The timer's handler cancels the socket (the read in flight too: the connection ends either way).
  c.arm_timer(clock::now() + write_timeout, true);
  error_code ec;
  if (!body.empty() && body.size() <= coalesce_limit) {
    std::string whole;
    whole.reserve(head.size() + body.size());
    whole.append(head).append(body);
    net::async_write(c.stream, net::buffer(whole), yield[ec]);
  } else {
    const std::array<net::const_buffer, 2> parts{net::buffer(head.data(), head.size()),
                                                 net::buffer(body.data(), body.size())};
    net::async_write(c.stream, parts, yield[ec]);
  }
  c.disarm_timer();
  if (ec) c.broken = true;
  return !ec;
}

void tls_client_io::close(clock::duration write_timeout, net::yield_context yield) {
  auto& c = *conn_;
  auto& socket = c.stream.next_layer();
  // Cancelled by a drain or a shutdown, the connection is still sound: it is closed politely too.
  const bool read_failed = c.read_done && c.read_ec && c.read_ec != net::error::operation_aborted;
  if (!c.broken && !c.peer_gone && !read_failed && socket.is_open()) {
    // close_notify only, without waiting for the client's (it may never come): as if the client's had
    // arrived already, SSL_shutdown then only writes. A client that takes nothing more is not waited for
    // long: the connection is over either way.
    SSL_set_shutdown(c.stream.native_handle(), SSL_RECEIVED_SHUTDOWN);
    c.arm_timer(clock::now() + std::min<clock::duration>(write_timeout, close_notify_limit), true);
    error_code ec;
    c.stream.async_shutdown(yield[ec]);
    c.disarm_timer();
  }
  error_code ignored;
  socket.shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  socket.close(ignored);
}

}  // namespace gateway
