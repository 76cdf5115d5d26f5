#include "gateway/server/client_io.hpp"
#include "gateway/server/request_framing.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cerrno>
#include <memory>
#include <utility>

namespace gateway {

namespace net = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;

client_io::client_io(net::ip::tcp::socket& socket, std::size_t buffer_limit)
    : socket_(socket),
      buffer_(buffer_limit),
      readiness_(socket),
      timer_(socket.get_executor()),
      exact_(report_input_left(socket)),
      alive_(std::make_shared<client_io*>(this)) {}

client_io::~client_io() {
  *alive_ = nullptr;  // the timer's handler may still be queued
}

// Every change of state_, and the only legal ones (anything else is a bug):
//   looked_empty  unread, drained, pending -> drained; aborted -> aborted (the next wait must see it)
//   input         unread, drained, pending, watching -> pending; aborted, peer_closed -> unchanged
//   cancelled     unread, drained, pending, watching, aborted -> aborted; peer_closed -> unchanged
//   consumed      pending, aborted -> unread
//   watch         drained -> watching; aborted -> aborted (no readiness wait is queued: nothing to watch)
//   unwatch       watching -> drained; pending, aborted, peer_closed -> unchanged
//   peer_left     unread, drained, pending, aborted -> peer_closed
void client_io::on(event e) {
  using enum state;
  const state s = state_;
  bool legal = false;
  switch (e) {
    case event::looked_empty:
      legal = s == unread || s == drained || s == pending || s == aborted;
      if (s != aborted) state_ = drained;
      break;
    case event::input:
      legal = true;
      if (s != aborted && s != peer_closed) state_ = pending;
      break;
    case event::cancelled:
      legal = true;
      if (s != peer_closed) state_ = aborted;
      break;
    case event::consumed:
      legal = s == pending || s == aborted;
      state_ = unread;
      break;
    case event::watch:
      legal = s == drained || s == aborted;
      if (s == drained) state_ = watching;
      break;
    case event::unwatch:
      legal = s == watching || s == pending || s == aborted || s == peer_closed;
      if (s == watching) state_ = drained;
      break;
    case event::peer_left:
      legal = s == unread || s == drained || s == pending || s == aborted;
      state_ = peer_closed;
      break;
  }
  assert(legal && "client_io: illegal state transition");
  (void)legal;
}

client_io::read_result client_io::read_request(request_parser& parser, clock::time_point idle_until,
                                               clock::duration header_timeout,
                                               const std::function<void()>& on_first_byte,
                                               net::yield_context yield, bool with_body) {
  // The head only, unless `with_body`: a request with a body ends the read (body_limit) as soon as its
  // head is parsed, before any of the body is (Beast's chunk parser is never reached); the caller decides
  // whether its route takes one and then reads on with `with_body`.
  parser.eager(with_body);
  bool started = buffer_.size() > 0;  // a pipelined request is already arriving
  auto until = idle_until;
  if (started) {
    on_first_byte();
    until = clock::now() + header_timeout;
  }
  fold_watch folds;  // an obs-fold in the head is refused
  for (;;) {
    if (buffer_.size() > 0) {
      error_code ec;
      const bool head_done = parser.is_header_done();
      const auto data = buffer_.data();
      const auto taken = parser.put(data, ec);
      if (!head_done) folds.taken(static_cast<const char*>(data.data()), taken);
      buffer_.consume(taken);
      if (folds.folded()) return {false, http::error::bad_field};
      if (parser.is_done()) return {true, {}};
      if (ec && ec != http::error::need_more) return {false, ec};
      if (parser.is_header_done() && !with_body) return {false, http::error::body_limit};
    }
    // Nothing was waiting at the last look (after the previous request, or a peek): no read until epoll
    // reports something; the client cannot have sent its next request before it had this answer.
    if (state_ == state::drained && wait_readable(until, yield) != wait_result::readable) return {false, {}};
    const auto got = read_now(socket_, buffer_, 1024);
    if (got.drained && (exact_ || got.ec == net::error::would_block)) note_drained();
    if (got.bytes > 0) {
      if (!started) {
        started = true;
        on_first_byte();
        until = clock::now() + header_timeout;
      }
      continue;
    }
    if (got.ec == net::error::eof) {  // a cut request is partial_message (no answer), none at all just ends
      on(event::input);
      if (!parser.got_some()) return {false, {}};
      error_code ec;
      parser.put_eof(ec);
      return {false, ec ? ec : error_code(http::error::partial_message)};
    }
    if (got.ec == net::error::no_buffer_space) return {false, http::error::buffer_overflow};
    if (got.ec != net::error::would_block) return {false, {}};  // reset: nothing to answer
    // Still not drained: only an abort is left to report (the wait returns at once).
    if (state_ != state::drained && wait_readable(until, yield) != wait_result::readable) return {false, {}};
  }
}

client_io::body_read client_io::read_body(body_parser& parser, char* out, std::size_t size,
                                          clock::time_point until, net::yield_context yield) {
  auto& body = parser.get().body();
  body.data = out;
  body.size = size;
  for (;;) {
    if (parser.is_done()) return {size - body.size, true, true, {}};
    if (buffer_.size() > 0) {
      error_code ec;
      buffer_.consume(parser.put(buffer_.data(), ec));
      const auto got = size - body.size;
      if (parser.is_done()) return {got, true, true, {}};
      if (ec && ec != http::error::need_more && ec != http::error::need_buffer)
        return {got, false, false, ec};
      if (got > 0 || body.size == 0) return {got, false, true, {}};
    }
    // As in read_request: read only what epoll has announced, or what a look may still find.
    if (state_ == state::drained && wait_readable(until, yield) != wait_result::readable)
      return {0, false, false, {}};
    const auto got = read_now(socket_, buffer_, 1024);
    if (got.drained && (exact_ || got.ec == net::error::would_block)) note_drained();
    if (got.bytes > 0) continue;
    if (got.ec == net::error::eof) {
      on(event::input);
      return {0, false, false, http::error::partial_message};
    }
    if (got.ec != net::error::would_block) return {0, false, false, {}};
    if (state_ != state::drained && wait_readable(until, yield) != wait_result::readable)
      return {0, false, false, {}};
  }
}

void client_io::linger(clock::duration max, std::size_t max_bytes, net::yield_context yield) {
  if (state_ == state::peer_closed || state_ == state::watching) return;
  const auto until = clock::now() + max;
  std::size_t dropped = buffer_.size();
  buffer_.consume(buffer_.size());
  while (dropped < max_bytes) {
    if (state_ == state::drained && wait_readable(until, yield) != wait_result::readable) return;
    const auto got = read_now(socket_, buffer_, 1024);
    dropped += got.bytes;
    buffer_.consume(buffer_.size());
    if (got.drained && (exact_ || got.ec == net::error::would_block)) note_drained();
    if (got.ec && got.ec != net::error::would_block) return;  // the client closed (or reset)
    if (got.bytes == 0 && state_ != state::drained && wait_readable(until, yield) != wait_result::readable)
      return;
  }
}

void client_io::note_drained() {
  on(event::looked_empty);
  // Reports whatever arrives from now on; after an abort nothing is queued (the next wait must see it).
  if (state_ != state::aborted && !readiness_.waiting()) readiness_.wait(*this);
}

void client_io::release_buffer() {
  if (buffer_.size() == 0) buffer_.shrink_to_fit();
}

client_io::wait_result client_io::wait_readable(clock::time_point until, net::yield_context yield) {
  assert(state_ != state::watching && state_ != state::peer_closed);
  if (state_ == state::unread || state_ == state::drained) {
    if (!readiness_.waiting()) readiness_.wait(*this);
    wait_until_ = until;
    arm_timer();
    wake_.wait(yield);  // resumed by on_readable, or by the timer at `until`
    if (state_ == state::unread || state_ == state::drained) return wait_result::timed_out;
  }
  const bool aborted = state_ == state::aborted;
  on(event::consumed);
  return aborted ? wait_result::aborted : wait_result::readable;
}

// The timer is set for a wait's end only when it is not set already for an earlier time: a connection's
// waits for its next request then cost no timer operation; a timer that fires before the wait's end (set
// for an earlier wait) sets itself again.
void client_io::arm_timer() {
  if (timer_job_ == timer_job::wait_end && timer_due_ <= wait_until_) return;
  timer_job_ = timer_job::wait_end;
  timer_due_ = wait_until_;
  timer_.expires_at(timer_due_);  // replaces a later wait (its handler runs as aborted)
  timer_.async_wait([alive = alive_](const error_code& ec) {
    if (ec || *alive == nullptr) return;
    auto& self = **alive;
    // A handler that was already queued when a write replaced it leaves the write's job alone.
    if (self.timer_job_ == timer_job::wait_end) self.timer_job_ = timer_job::none;
    if (!self.wake_.waiting()) return;  // a request is being handled; the next wait sets it again
    if (clock::now() < self.wait_until_) return self.arm_timer();
    self.wake_.notify();  // timed out
  });
}

void client_io::on_readable(const error_code& ec) {
  // Input, end of stream or an error is there now, and no new edge will announce it: the next wait
  // returns at once. An abort (the socket cancelled: drain, shutdown) ends the next wait too.
  const bool watched = state_ == state::watching;
  on(ec ? event::cancelled : event::input);
  if (!ec && !read_readiness::reports_waiting_input()) {
    // Queued again at once: the coroutine resumes only after the event loop has polled epoll again, and
    // an edge reported meanwhile (the client closing right after its request) must find a wait queued.
    // A wait that reports waiting input (the portable path) is queued again only once the input is read
    // (note_drained): queued now, it would fire at every poll until then, and the thread would spin.
    readiness_.wait(*this);
  }
  if (wake_.waiting()) {
    wake_.notify();
  } else if (watched && !ec) {
    check_peer();
  }
}

void client_io::watch_peer(std::function<void()> on_close) {
  on_close_ = std::move(on_close);
  // The request's last read left nothing behind: from now on epoll reports the client leaving. Else one
  // look first: an end of stream that arrived together with the request raises no edge of its own.
  if (state_ == state::drained && exact_) return on(event::watch);
  check_peer();
}

void client_io::stop_watch() {
  on(event::unwatch);  // the readiness wait stays queued: it is the next request's
  on_close_ = nullptr;
}

// A look while a watch is wanted: nothing waiting keeps (or starts) the watch; bytes (a pipelined request)
// end it quietly; the end of stream or an error calls on_close_.
void client_io::check_peer() {
  char byte = 0;
  ssize_t n = 0;
  do {
    n = ::recv(socket_.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    note_drained();
    return on(event::watch);
  }
  if (n > 0) return on(event::input);  // a pipelined request: the client is still there
  on(event::peer_left);
  if (auto cb = std::exchange(on_close_, nullptr)) cb();
}

bool client_io::send(std::string_view head, std::string_view body, clock::duration write_timeout,
                     net::yield_context yield) {
  std::array<iovec, 2> iov{
      {{const_cast<char*>(head.data()), head.size()}, {const_cast<char*>(body.data()), body.size()}}};
  msghdr msg{};
  msg.msg_iov = iov.data();
  msg.msg_iovlen = body.empty() ? 1 : 2;
  ssize_t n = 0;
  do {
    n = ::sendmsg(socket_.native_handle(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n >= 0 && static_cast<std::size_t>(n) == head.size() + body.size()) return true;
  if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;

  // The rest as the client takes it, under the write timeout. The timer's handler may run after this
  // returns (it was due already): it cancels the socket only while this write is still going.
  const auto sent = static_cast<std::size_t>(std::max<ssize_t>(n, 0));
  const std::array<net::const_buffer, 2> rest{
      net::buffer(head.data(), head.size()) + sent,
      net::buffer(body.data(), body.size()) + (sent > head.size() ? sent - head.size() : 0)};
  timer_job_ = timer_job::write_timeout;  // replaces the wait's (whose handler then runs as aborted)
  const auto write = ++writes_;
  timer_.expires_after(write_timeout);
  timer_.async_wait([alive = alive_, write](const error_code& ec) {
    if (ec || *alive == nullptr) return;
    auto& self = **alive;
    if (self.timer_job_ != timer_job::write_timeout || self.writes_ != write) return;
    error_code ignored;
    self.socket_.cancel(ignored);
  });
  error_code ec;
  net::async_write(socket_, rest, yield[ec]);
  timer_job_ = timer_job::none;
  timer_.cancel();
  return !ec;
}

}  // namespace gateway
