#pragma once
// The client socket's I/O for one connection coroutine, with as few system calls as a request allows:
// one `recvmsg` for a request that arrives in one piece (it also tells whether the client closed right
// behind it: TCP_INQ), one `sendmsg` for the answer, and no speculative read or re-arming of epoll in
// between. The socket is watched for input (read_readiness) from the first wait to the close, and that one
// watch serves in turn as the wait for the next request and, while a request is handled, as the watch for the
// client going away.
//
// read_request() reads and parses a request (its head: a request with a body fails with body_limit once
// its head is parsed, the body unread; called again `with_body`, it reads the body on, within the
// parser's body_limit) under the idle timeout (until the first byte) and the header timeout (for the
// rest); send() writes an answer, and only what the socket does not take at once
// is written asynchronously, under the write timeout. watch_peer() / stop_watch() bracket the handling of a
// request: the client closing (end of stream, reset) calls `on_close` once; bytes (a pipelined request) end
// the watch quietly. Everything runs on the socket's executor; cancelling the socket (drain, shutdown)
// ends a wait at once.

#include "gateway/runtime/duration.hpp"
#include "gateway/runtime/read_readiness.hpp"
#include "gateway/runtime/wake_event.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

namespace gateway {

class client_io final : read_readiness::listener {
 public:
  using request_parser = boost::beast::http::request_parser<boost::beast::http::string_body>;

  client_io(boost::asio::ip::tcp::socket& socket, std::size_t buffer_limit);
  client_io(const client_io&) = delete;
  client_io& operator=(const client_io&) = delete;
  ~client_io();

  struct read_result {
    bool ok = false;
    boost::system::error_code ec;  // why not: a parse error, or empty for end of stream / timeout / cancel
  };
  // `idle_until`: the first byte must arrive by then; after it the rest must within `header_timeout`.
  // `on_first_byte` runs when a request starts to arrive (the connection is no longer idle).
  read_result read_request(request_parser& parser, clock::time_point idle_until,
                           clock::duration header_timeout, const std::function<void()>& on_first_byte,
                           boost::asio::yield_context yield, bool with_body = false);
  bool buffered() const { return buffer_.size() > 0; }

  // A request body read piece by piece (pass-through routes): `parser` holds a head read by
  // read_request(); each call fills up to `size` bytes at `out` with what has arrived (at least one byte
  // unless the body ends), waiting for input until `until`. `done` once the body has ended (then
  // nothing more is read). Not ok on a cut body, a malformed chunk, a timeout or a cancel.
  using body_parser = boost::beast::http::request_parser<boost::beast::http::buffer_body>;
  struct body_read {
    std::size_t bytes = 0;
    bool done = false;
    bool ok = true;
    boost::system::error_code ec;  // a parse error or the body's end cut off (partial_message); else empty
  };
  body_read read_body(body_parser& parser, char* out, std::size_t size, clock::time_point until,
                      boost::asio::yield_context yield);
  // Frees the read buffer while nothing is buffered (it is allocated again for the next request).
  void release_buffer();

  // Writes head and body; false when the connection failed or the write timed out.
  bool send(std::string_view head, std::string_view body, clock::duration write_timeout,
            boost::asio::yield_context yield);

  // After the send side is shut down: reads and drops what the client still sends, until it closes, for
  // at most `max` or `max_bytes` (a lingering close).
  void linger(clock::duration max, std::size_t max_bytes, boost::asio::yield_context yield);

  void watch_peer(std::function<void()> on_close);
  void stop_watch();
  bool peer_closed() const { return state_ == state::peer_closed; }

 private:
  // What is known about the socket's input, and whether a request's handling is watching it. The
  // transitions all go through on(); its table lists the legal ones.
  enum class state : std::uint8_t {
    unread,       // nothing known: read before waiting (a new connection; a wait has just reported input)
    drained,      // nothing was waiting at the last look; the readiness wait reports what comes next
    pending,      // input, end of stream or an error is waiting, and no new edge will announce it
    aborted,      // the socket was cancelled (drain, shutdown): the next wait returns at once, aborted
    watching,     // drained, and a request is being handled: the readiness wait watches for the client
    peer_closed,  // the client closed while watched (end of stream or reset); final
  };
  enum class event : std::uint8_t {
    looked_empty,  // a read or a peek found nothing waiting (the readiness wait is queued unless aborted)
    input,         // the readiness wait fired, a read met the end of stream, or a peek found bytes
    cancelled,     // the readiness wait fired with an error: the socket was cancelled or closed
    consumed,      // a wait returned what pending / aborted announced
    watch,         // a request's handling starts watching (after a look that found nothing)
    unwatch,       // a request's handling has ended
    peer_left,     // a peek found the end of stream or an error
  };
  // What the timer is set for: a wait's end (at timer_due_) or a write's timeout; none once its handler
  // ran or the write ended. A wait's timer outlives its wait (see arm_timer); a write replaces it.
  enum class timer_job : std::uint8_t { none, wait_end, write_timeout };
  enum class wait_result { readable, timed_out, aborted };

  void on(event e);
  void on_readable(const boost::system::error_code& ec) override;
  wait_result wait_readable(clock::time_point until, boost::asio::yield_context yield);
  void check_peer();
  void note_drained();
  void arm_timer();

  boost::asio::ip::tcp::socket& socket_;
  boost::beast::flat_buffer buffer_;
  read_readiness readiness_;
  boost::asio::steady_timer timer_;  // a wait's end (idle, header timeout), or a write's timeout
  wake_event wake_;   // the coroutine in wait_readable(); waiting() while it is suspended there
  const bool exact_;  // reads report an end of stream left behind (TCP_INQ); else a peek checks
  state state_ = state::unread;
  timer_job timer_job_ = timer_job::none;
  clock::time_point timer_due_{};      // with timer_job::wait_end
  clock::time_point wait_until_{};     // the current wait's end
  std::uint64_t writes_ = 0;           // numbers the writes, for a timer's handler that runs late
  std::shared_ptr<client_io*> alive_;  // null once destroyed: the timer's handler may still be queued
  std::function<void()> on_close_;     // the watch's, called once when the client leaves
};

}  // namespace gateway
