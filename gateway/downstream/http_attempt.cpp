#include "gateway/downstream/http_attempt.hpp"

#include "gateway/downstream/http_call.hpp"
#include "gateway/downstream/http_result.hpp"
#include "gateway/downstream/retry_policy.hpp"
#include "gateway/runtime/memory_budget.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>

#include <sys/socket.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <utility>

namespace gateway {

namespace net = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;

namespace {

constexpr std::size_t response_header_limit = 16 * 1024;
// Unparsed bytes a connection may hold: a header in progress, or a chunk header line (body bytes go to
// the body as they are parsed).
constexpr std::size_t read_buffer_limit = response_header_limit + 4096;

}  // namespace

http_attempt* http_attempt::create(http_call& call, std::optional<http_attempt>* member, std::size_t slot,
                                   std::string_view head, connection_pool& pool,
                                   std::size_t max_response_bytes, const answer_capture& keep,
                                   clock::time_point deadline, clock::time_point now) {
  if (member != nullptr)
    return &member->emplace(key(), call, true, slot, head, pool, max_response_bytes, keep, deadline, now);
  return new http_attempt(key(), call, false, slot, head, pool, max_response_bytes, keep, deadline, now);
}

http_attempt::http_attempt(key, http_call& call, bool in_call, std::size_t slot, std::string_view head,
                           connection_pool& pool, std::size_t max_response_bytes, const answer_capture& keep,
                           clock::time_point deadline, clock::time_point now)
    : call_(call),
      head_(head),
      pool_(pool),
      max_response_bytes_(max_response_bytes),
      keep_(keep),
      deadline_(deadline),
      started_(now),
      slot_(static_cast<std::uint8_t>(slot)),
      in_call_(in_call) {}

// The legal changes of state; any other is a bug:
//   acquiring         -> queued | connecting | writing (an idle or handed-over connection) | finished
//   queued            -> acquiring (handed a connection or a slot, timed out, or cancelled)
//   connecting        -> connect_timed_out | writing | handshaking (https) | finished
//   handshaking       -> connect_timed_out | writing | finished
//   connect_timed_out -> finished
//   writing           -> reading | acquiring (the retry on a new connection) | finished
//   reading           -> acquiring (the retry) | finished
//   finished          -> none: the attempt frees itself (free_if_done())
constexpr bool http_attempt::legal(state from, state to) {
  switch (from) {
    case state::acquiring:
      return to == state::queued || to == state::connecting || to == state::writing || to == state::finished;
    case state::queued:
      return to == state::acquiring;
    case state::connecting:
      return to == state::connect_timed_out || to == state::writing || to == state::handshaking ||
             to == state::finished;
    case state::handshaking:
      return to == state::connect_timed_out || to == state::writing || to == state::finished;
    case state::connect_timed_out:
      return to == state::finished;
    case state::writing:
      return to == state::reading || to == state::acquiring || to == state::finished;
    case state::reading:
      return to == state::acquiring || to == state::finished;
    case state::finished:
      return false;
  }
  return false;
}

// The one place the state changes (asserting that the change is legal()), together with what a
// cancellation interrupts in the new state.
void http_attempt::enter(state next) {
  assert(legal(state_, next));
  switch (next) {
    case state::queued:
      hook_.emplace(cancel_, [this] { timer_->cancel(); });
      break;
    case state::writing:
      input_waiting_ = false;
      [[fallthrough]];
    case state::connecting:
    case state::handshaking:
      // Closing (not just cancelling) means an operation started after the hook fired fails at once too.
      hook_.emplace(cancel_, [this] { close_socket(); });
      break;
    case state::reading:
      break;  // writing's hook goes on
    case state::acquiring:
    case state::connect_timed_out:
    case state::finished:
      hook_.reset();
      break;
  }
  state_ = next;
}

// acquiring: an idle connection when `reuse` allows, else a new one in a free slot, else a place in the
// pool's queue.
void http_attempt::acquire(bool reuse) {
  if (cancel_.cancelled()) return fail(net::error::operation_aborted, "cancelled");
  if (reuse) {
    if (auto conn = pool_.take_idle(started_)) return exchange(std::move(conn));
  }
  if (pool_.reserve_slot(!reuse)) return connect();
  wait_for_connection();
}

void http_attempt::wait_for_connection() {
  timer_ = std::make_unique<boost::asio::steady_timer>(pool_.executor());
  timer_->expires_at(deadline_);
  waiter_ = {&*timer_, nullptr, false};
  pool_.enqueue(waiter_);
  enter(state::queued);
  timer_->async_wait([this](const error_code&) { waited(); });
}

void http_attempt::waited() {
  enter(state::acquiring);
  pool_.dequeue(waiter_);
  timer_.reset();  // its handler is this one
  if (waiter_.conn) {
    if (!cancel_.cancelled()) return exchange(std::move(waiter_.conn));
    pool_.release(std::move(waiter_.conn), clock::now());  // pass it on to the next waiter
    return fail(net::error::operation_aborted, "cancelled");
  }
  if (!waiter_.slot_freed) {
    return fail(
        cancel_.cancelled() ? error_code(net::error::operation_aborted) : error_code(net::error::timed_out),
        "no connection free in time");
  }
  pool_.claim_freed_slot();
  if (cancel_.cancelled()) {
    pool_.release_slot();  // the freed slot goes to the next waiter
    return fail(net::error::operation_aborted, "cancelled");
  }
  connect();
}

void http_attempt::exchange(connection_pool::handle conn) {
  if (conn->stale) {  // the downstream closed it while it was being handed over
    pool_.discard(std::move(conn));
    return acquire(false);
  }
  conn_ = std::move(conn);
  contacted_ = true;
  write();
}

void http_attempt::connect() {
  conn_ = pool_.open();
  contacted_ = true;
  enter(state::connecting);
  // The connect timeout, when it ends before the deadline (which the fan-out enforces via cancel_); it
  // times an https connection's handshake too.
  // Armed at most once per call: a retry follows only a failed reused connection, never a new one.
  const auto limit = clock::now() + pool_.connect_timeout();
  if (limit < deadline_) {
    assert(!timer_);
    timer_ = std::make_unique<boost::asio::steady_timer>(pool_.executor(), limit);
    timer_->async_wait([this](const error_code& ec) { connect_timer_ended(ec); });
  }
  conn_->socket.async_connect(conn_->remote, [this](const error_code& ec) { connected(ec); });
}

void http_attempt::connect_timer_ended(const error_code& ec) {
  timer_.reset();  // its handler is this one
  if (!ec && (state_ == state::connecting || state_ == state::handshaking)) {
    enter(state::connect_timed_out);
    close_socket();
  }
  free_if_done();
}

void http_attempt::connected(error_code ec) {
  if (timer_ && pool_.tls() == nullptr) timer_->cancel();  // https: it times the handshake next
  if (state_ == state::connect_timed_out) {
    ec = net::error::timed_out;
  } else if (!ec && cancel_.cancelled()) {
    ec = net::error::operation_aborted;
  }
  if (ec) {
    return exchange_failed(ec, ec == net::error::connection_refused ? "connect refused" : "connect failed");
  }
  pool_.connected(*conn_);
  error_code ignored;
  conn_->socket.set_option(net::ip::tcp::no_delay(true), ignored);
  if (pool_.tls() != nullptr) return handshake();
  report_input_left(conn_->socket);
  write();
}

void http_attempt::write() {
  enter(state::writing);
  parser_.emplace(max_response_bytes_, response_header_limit);
  parser_->capture(keep_);
  conn_->buffer.clear();
  if (conn_->tls) return tls_write();
  conn_->user = this;
  if (!conn_->readiness.waiting()) conn_->readiness.wait(*conn_);
  const auto sent =
      ::send(conn_->socket.native_handle(), head_.data(), head_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (sent == static_cast<ssize_t>(head_.size())) return enter(state::reading);  // the answer is awaited
  if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
    return written(error_code(errno, boost::system::system_category()));
  }
  net::async_write(
      conn_->socket,
      net::buffer(head_.data(), head_.size()) + static_cast<std::size_t>(std::max<ssize_t>(sent, 0)),
      [this](const error_code& ec, std::size_t) { written(ec); });
}

void http_attempt::written(const error_code& ec) {
  if (ec) return exchange_failed(ec, "write failed");
  // Fired while the write completed: don't read.
  if (cancel_.cancelled()) return exchange_failed(net::error::operation_aborted, "cancelled");
  enter(state::reading);
  if (conn_->tls) return tls_read();
  if (std::exchange(input_waiting_, false)) on_readable(error_code());
}

// The connection has input (or was closed under the call: `ec`). Reads until it is drained, parsing as
// it goes; waits again when the answer is still incomplete. A read goes into the I/O thread's scratch
// buffer whenever the connection's own holds nothing (the common case: every answer whose head arrives
// whole), so that a connection waiting for its answer, or idle in the pool, holds no buffer; only the
// unparsed rest of an incomplete head (or chunk size line) is kept in the connection's own, and the reads
// after it go there.
void http_attempt::on_readable(const error_code& ec) {
  if (state_ == state::writing) {  // an early answer (or an error) waits until the request is written
    input_waiting_ = !ec;
    return;
  }
  if (ec) return read_failed(ec);
  for (;;) {
    auto& buffer = conn_->buffer.size() == 0 ? read_scratch() : conn_->buffer;
    const auto got = read_now(conn_->socket, buffer, 512);
    if (got.ec == net::error::would_block) return conn_->readiness.wait(*conn_);
    if (got.ec == net::error::eof) return end_of_stream();
    if (got.ec) return read_failed(got.ec);
    if (!consume_input(buffer, got.drained)) return;
    if (got.drained) return conn_->readiness.wait(*conn_);
  }
}

// The thread's buffer for reads on plain connections (on_readable). It holds bytes only within one call
// of consume_input, which empties it before anything else can run: nothing that reads into it again (a
// readiness handler) runs inside consume_input.
boost::beast::flat_buffer& http_attempt::read_scratch() {
  thread_local boost::beast::flat_buffer scratch = [] {
    boost::beast::flat_buffer b;
    b.reserve(64 * 1024);  // what read_now reads at most at once; only the pages written are resident
    return b;
  }();
  return scratch;
}

// Parses what `buffer` (the connection's, or the thread's scratch buffer) holds. True when the answer
// needs more input; false when the exchange has ended (answered, or failed), reported. `drained`: nothing
// more is waiting to be read.
bool http_attempt::consume_input(boost::beast::flat_buffer& buffer, bool drained) {
  error_code parse_ec;
  const auto data = buffer.data();
  buffer.consume(
      parser_->put(std::string_view(static_cast<const char*>(data.data()), data.size()), parse_ec));
  const auto left = buffer.size();  // unparsed: an incomplete head or chunk line, or bytes past the answer
  if (&buffer != &conn_->buffer) {  // the scratch buffer is empty again before anything else runs
    const bool more = !parse_ec || parse_ec == http::error::need_more;
    if (left != 0 && more && left <= read_buffer_limit && !parser_->is_done()) {
      const auto rest = buffer.data();
      conn_->buffer.commit(net::buffer_copy(conn_->buffer.prepare(left), rest));
    }
    buffer.clear();
  } else if (left == 0 && !conn_->tls) {
    buffer.shrink_to_fit();  // the rest of a head arrived: the connection holds no buffer again (a TLS
                             // connection reads into its own buffer every time, and keeps it)
  }
  if (parse_ec && parse_ec != http::error::need_more) {
    read_failed(parse_ec);
    return false;
  }
  if (!charge_body()) {
    exchange_failed(http::error::buffer_overflow, "memory budget exhausted");
    return false;
  }
  // Bytes past the answer, or the downstream closing right behind it: the connection is not reused.
  if (parser_->is_done()) {
    answered(drained && left == 0);
    return false;
  }
  if (left > read_buffer_limit) {
    read_failed(http::error::buffer_overflow);
    return false;
  }
  return true;
}

// Counts the answer's body buffer against the process's memory budget as it grows; false when the
// budget has no room for it (the call then fails).
bool http_attempt::charge_body() {
  const auto capacity = parser_->body().capacity();
  if (capacity <= charged_) return true;
  if (!memory_budget::try_charge(capacity - charged_)) return false;
  charged_ = capacity;
  return true;
}

// The downstream closed the connection: the end of an answer without a length, or a failure.
void http_attempt::end_of_stream() {
  if (!parser_->got_some()) return read_failed(http::error::end_of_stream);
  error_code ec;
  parser_->put_eof(ec);
  if (ec) return read_failed(ec);
  answered(false);  // closed: never reused
}

// The whole answer is in: the connection goes back to the pool when nothing followed it (`drained`: nothing
// waiting to be read, nothing left unparsed).
void http_attempt::answered(bool drained) {
  const auto now = clock::now();
  if (parser_->keep_alive() && drained) {
    pool_.release(std::move(conn_), now);
  } else {
    pool_.discard(std::move(conn_));
  }
  // A 2xx answer, or one the call passes, in a content coding is decoded now, within the body limit (a zip
  // bomb fails the call), and counted against the memory budget as decoded.
  const auto status = parser_->status();
  const bool passed = keep_.pass != nullptr && keep_.pass->passes(status);
  const char* unusable = nullptr;
  auto kind = call_error::invalid_body;
  if (parser_->coding() != content_coding::identity && ((status >= 200 && status <= 299) || passed)) {
    unusable = decode_body(parser_->coding(), parser_->body(), max_response_bytes_);
    if (unusable && std::string_view(unusable) == decoded_too_large) kind = call_error::too_large;
    if (!unusable && !charge_body()) {
      unusable = "memory budget exhausted";
      kind = call_error::other;
    }
  }
  // Built only now: a call in flight does not carry a result. A passed answer whose body could not be
  // decoded is still passed, without its body.
  if (passed) {
    auto result = passed_answer(status, unusable ? std::string() : std::move(parser_->body()));
    result.headers = std::move(parser_->captured());  // the fields pass_headers names
    return finish(std::move(result), now);
  }
  auto result = unusable ? unusable_answer(status, unusable, kind)
                         : answer_result(status, std::move(parser_->body()), parser_->fresh_for());
  if (result.ok()) {
    result.headers = std::move(parser_->captured());  // empty unless asked for
    result.sets_cookie = parser_->captured_cookie();
    result.shareable = parser_->shareable();
  }
  finish(std::move(result), now);
}

void http_attempt::read_failed(const error_code& ec) {
  exchange_failed(ec, ec == http::error::body_limit ? "body too large" : "read failed");
}

// The exchange on conn_ failed: the connection is closed, and the attempt either tries a new one
// (retry_policy: a stale pooled connection) or fails; a failure before any of the answer arrived may be
// retried by the call (another attempt).
void http_attempt::exchange_failed(const error_code& ec, const char* what) {
  const bool answer_started = state_ == state::reading && parser_->got_some();
  const bool retry = retry_on_new_connection({ec, conn_->reused, answer_started, cancel_.cancelled()});
  pool_.discard(std::move(conn_));
  if (!retry) {
    const bool connecting =
        state_ == state::connecting || state_ == state::handshaking || state_ == state::connect_timed_out;
    if (cancel_.cancelled() || answer_started || ec == http::error::body_limit ||
        ec == http::error::buffer_overflow) {
      failure_ = report::failure::other;
    } else {
      failure_ = connecting ? report::failure::connect : report::failure::reset;
    }
    return fail(ec, what, connecting);
  }
  enter(state::acquiring);
  acquire(false);
}

void http_attempt::fail(const error_code& ec, const char* what, bool connecting) {
  auto result = failure_result(ec, what, cancel_.cancelled());
  if (connecting && result.outcome == call_outcome::timeout) {  // a connect failure, not a slow answer
    result.error = call_error::connect_timeout;
    result.detail = "connect timeout";
  }
  finish(std::move(result), clock::now());
}

// Hands the result to the call: the attempt's last act. Safe (wake_event's rule) because it is reached
// only as the last step of one of the attempt's own completion handlers (a timer, the connect, the write,
// a readiness wait; https: the handshake, a TLS read), or of start() while its caller touches nothing
// after it; and nothing of the attempt is touched after the report: it is freed before, or kept
// (finished, without a cancel hook) only for the connect timer's handler, which touches nothing else.
void http_attempt::finish(call_result&& result, clock::time_point now) {
  enter(state::finished);
  result.latency = now - started_;
  result.contacted = contacted_;
  // The body now belongs to the result, which the fan-out counts until the answer is merged.
  memory_budget::release(std::exchange(charged_, 0));
  auto& call = call_;
  const auto slot = slot_;
  report r{std::move(result), failure_, now};
  if (timer_) timer_->cancel();  // its handler, due at once, frees the attempt
  free_if_done();
  call.attempt_done(slot, std::move(r));
}

// The one place the attempt frees itself: it has reported, and no handler of its own is still to run.
// The call's member asks the call to end it, which may free the call too (so either is the last act).
void http_attempt::free_if_done() {
  if (state_ != state::finished || timer_) return;
  if (in_call_) return call_.first_attempt_ended();
  delete this;
}

void http_attempt::close_socket() {
  error_code ignored;
  conn_->socket.close(ignored);
}

}  // namespace gateway
