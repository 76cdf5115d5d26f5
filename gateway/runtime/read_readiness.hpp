#pragma once
// Tells when a TCP socket has something to read (data, end of stream or an error), on the fast path
// without a system call to start waiting. Asio's own ways to wait cost one each time on epoll:
// `async_read_some` first tries a `recv` that fails with EAGAIN when the answer cannot be there yet (just
// after writing a request), and `async_wait` re-arms the descriptor with `epoll_ctl`. The socket is already
// registered edge-triggered for input, so a queued operation that never reads by itself is enough: epoll
// reports the next arrival.
//
// The contract that makes this correct with edge triggering: after a wake-up, the owner reads until
// read_now reports the socket drained, then calls wait() again before returning to the event loop; or it
// calls wait() again at once and remembers that input is pending. Data that arrives later raises a new
// edge, reported while the wait is queued. An end of stream that arrived together with the data raises no
// edge of its own: read_now on a socket with report_input_left tells it apart.
//
// One wait at a time; the listener runs on the socket's executor, with an error (operation_aborted) when
// the socket is cancelled or closed. Destroying this object with a wait queued is allowed only after the
// socket was closed (or together with it): the queued wait then frees itself when Asio completes or
// discards it, without calling the listener.
//
// Two implementations, chosen at build time (read_readiness_path.hpp): the fast path above, a reactor
// operation of Asio 1.81's epoll reactor, built only for Boost 1.81 with Asio on epoll; elsewhere, or with
// the CMake option GATEWAY_PORTABLE_READINESS, `async_wait(wait_read)`: public API, one `epoll_ctl` per
// wait. The portable path keeps the contract and reports more: a wait queued while input is waiting
// completes at the event loop's next poll if that input is still unread then (level, not edge). A
// report means "may be readable" on either path; an owner that queues the wait again at once and leaves
// the input unread is told again at every poll until it reads (the event loop does not sleep meanwhile).

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/system/error_code.hpp>

namespace gateway {

class read_readiness {
 public:
  class listener {
   public:
    virtual void on_readable(const boost::system::error_code& ec) = 0;

   protected:
    ~listener() = default;
  };

  explicit read_readiness(boost::asio::ip::tcp::socket& socket);
  read_readiness(const read_readiness&) = delete;
  read_readiness& operator=(const read_readiness&) = delete;
  ~read_readiness();

  // Queues the wait; `l` is called once, when the socket becomes readable or the wait is aborted.
  void wait(listener& l);
  bool waiting() const;
  // True on the portable path: a wait reports input that is already waiting (level), so an owner that
  // leaves input unread must not queue a wait until it has read (it would be told at every poll). False
  // on the fast path, where only new arrivals are reported (edge) and a wait must stay queued.
  static bool reports_waiting_input();

 private:
  struct state;  // the queued wait's; owned by this object, or by the queued wait once orphaned
  boost::asio::ip::tcp::socket& socket_;
  state* state_;
};

// Asks the kernel to report, with every read, how much is left to read (TCP_INQ): an end of stream that
// arrived together with the data counts as something left. One `setsockopt` per connection; false when
// the kernel refuses it (older than 4.18), and read_now then treats a short read as drained.
bool report_input_left(boost::asio::ip::tcp::socket& socket);

// One non-blocking `recvmsg` into `buffer`'s free space (at least `min_room` bytes, at most 64 KiB, within
// the buffer's max size), what a readiness owner does after a wake-up. `ec`: would_block (nothing
// waiting), eof (the peer closed), no_buffer_space (the buffer is full) or the socket's error.
struct socket_read {
  std::size_t bytes = 0;  // committed to the buffer
  // Nothing more is waiting: no data and no end of stream (exact with report_input_left or after
  // would_block; else a read shorter than the room it had, which may leave an end of stream behind).
  // Anything arriving later raises a new edge.
  bool drained = false;
  boost::system::error_code ec;
};
socket_read read_now(boost::asio::ip::tcp::socket& socket, boost::beast::flat_buffer& buffer,
                     std::size_t min_room);

}  // namespace gateway
