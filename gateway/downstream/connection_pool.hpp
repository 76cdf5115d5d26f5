#pragma once
// Keep-alive connections to one endpoint (address) of a downstream, owned by one I/O thread (no locking:
// every member runs on that thread's io_context). At most `cap` connections are open, and at most
// `max_connecting` of them are being connected at once (the connect ramp: a burst of new calls, at a cold
// start say, would otherwise send thousands of SYNs at once, overflow the downstream's listen backlog and
// wait a whole SYN retransmission, past any connect timeout, for an outage of the gateway's own making). A
// caller at either limit waits in FIFO order (a waiter with a timer) until a connection is released or
// closed or a connect ends, its deadline passes, or it is cancelled: the gateway's own queueing, which
// never counts against the downstream (it is not contacted). The pool never waits itself: callers drive it
// (http_attempt's state machine). Include only from downstream implementation files: it pulls in Beast.
//
// An https downstream's pool makes TLS connections (connection::tls, from the downstream's shared
// context) and keeps the TLS session of its last new connection, so that the next new one resumes it
// (an abbreviated handshake) instead of negotiating afresh; keep-alive reuse spares the handshake
// altogether. A plain pool's connections have no TLS layer and cost nothing for it.

#include "gateway/runtime/cancel_source.hpp"
#include "gateway/runtime/duration.hpp"
#include "gateway/runtime/read_readiness.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

typedef struct ssl_session_st SSL_SESSION;
typedef struct ssl_st SSL;

namespace gateway {

class tls_client_context;
struct tls_stream;

// TLS handshakes made by pools (full or resumed), counted by the owner of the pools (read by the metrics
// on another thread: relaxed atomics, written by one I/O thread only).
struct tls_handshake_counts {
  std::atomic<std::uint64_t> full{0};
  std::atomic<std::uint64_t> resumed{0};
};

class connection_pool {
 public:
  // A connection is watched for input from connect to close (read_readiness): the call using it is told
  // when its answer arrives; while it idles in the pool, anything arriving (the downstream closing it,
  // or bytes nobody asked for) marks it stale and closes it.
  struct connection final : read_readiness::listener {
    // Both out of line: `tls` is complete only where TLS is used.
    connection(const boost::asio::any_io_executor& ex, connection_pool& owner);
    // Closes the socket before `readiness` goes: a queued wait completes aborted and frees itself.
    ~connection();
    void on_readable(const boost::system::error_code& ec) override;

    boost::asio::ip::tcp::socket socket;
    std::unique_ptr<tls_stream> tls;  // https: the TLS layer over `socket`, once connected; else null
    // Plain: only the unparsed rest of an incomplete head (http_attempt::on_readable), else empty, without
    // memory; TLS: every read.
    boost::beast::flat_buffer buffer;
    read_readiness readiness;
    connection_pool& pool;
    read_readiness::listener* user = nullptr;  // the call exchanging on it; null while idle
    clock::time_point last_used{};
    bool reused = false;  // served an exchange before
    bool stale = false;   // input arrived while idle: not fit for another exchange
    // Its last answer had no body (a pass-through HEAD, 204 or 304): the next lease peeks for bytes a
    // downstream sent behind it late, before the pool's watch could report them.
    bool check_before_reuse = false;
    bool connecting = false;  // opened, its connect not ended yet (counted in the pool's connect ramp)
    boost::asio::ip::tcp::endpoint remote;
  };
  using handle = std::unique_ptr<connection>;

  // A caller waiting for a connection at the cap: its timer expires at its deadline; the pool cancels it
  // early after handing over a released connection (`conn`) or a freed slot (`slot_freed`: the caller then
  // takes it with claim_freed_slot() and opens a connection in it, or gives it back with release_slot()).
  struct waiter {
    boost::asio::steady_timer* timer = nullptr;
    handle conn;
    bool slot_freed = false;
  };

  // `tls` (an https downstream's context) and `counts` must outlive the pool; both null for http.
  connection_pool(boost::asio::any_io_executor ex, const boost::asio::ip::tcp::endpoint& remote,
                  std::size_t cap, microseconds connect_timeout, microseconds idle_timeout,
                  const tls_client_context* tls = nullptr, tls_handshake_counts* counts = nullptr,
                  std::size_t max_connecting = 64);
  connection_pool(const connection_pool&) = delete;
  connection_pool& operator=(const connection_pool&) = delete;
  ~connection_pool();

  // An idle connection still fit for use at `now`, or null.
  handle take_idle(clock::time_point now);
  // Takes a slot for a new connection when one is free (for `fresh`, closing an idle connection to make
  // room); the caller then calls open() or release_slot().
  bool reserve_slot(bool fresh);
  // A waiter handed `slot_freed` takes it (then open() or release_slot()).
  void claim_freed_slot();
  // Gives a taken slot back (to the next waiter, if any).
  void release_slot();
  // A new, unconnected connection in a taken slot, addressed to the pool's endpoint; its connect counts
  // in the ramp until connected() or until it is discarded.
  handle open();
  // `conn`'s TCP connect succeeded: it leaves the connect ramp (a waiter may connect in its place).
  void connected(connection& conn);
  void enqueue(waiter& w) { waiters_.push_back(&w); }
  void dequeue(waiter& w);
  const boost::asio::any_io_executor& executor() const { return ex_; }
  microseconds connect_timeout() const { return connect_timeout_; }

  // https: the context new connections are made from; null for a plain pool.
  const tls_client_context* tls() const { return tls_; }
  // The session a new connection offers to resume (null: none yet).
  SSL_SESSION* tls_session() const { return session_; }
  // Keeps a copy of `ssl`'s session for the next new connection, when the server allows resuming it.
  void keep_tls_session(SSL* ssl);
  void count_handshake(bool resumed);

  // Returns a connection whose last exchange finished cleanly (at `now`), for reuse; watches it while idle.
  void release(handle conn, clock::time_point now);
  // Closes a connection (failed or unfinished exchange) and frees its slot.
  void discard(handle conn);
  void close_idle();
  // The pool's address is no longer the downstream's: idle connections are closed now, and connections
  // given back later are closed instead of kept.
  void retire() {
    retired_ = true;
    close_idle();
  }

 private:
  void idle_readable(connection& conn);
  void wake_first_waiter(handle conn);
  void close(handle conn);  // closes without waking a waiter
  // A waiter may be given a slot for a new connection: below the cap and the connect ramp's limit.
  bool room() const { return open_ + reserved_ < cap_ && connecting_ + reserved_ < max_connecting_; }

  boost::asio::any_io_executor ex_;
  boost::asio::ip::tcp::endpoint remote_;
  std::size_t cap_;
  std::size_t max_connecting_;
  microseconds connect_timeout_;
  microseconds idle_timeout_;
  const tls_client_context* tls_;
  tls_handshake_counts* counts_;
  SSL_SESSION* session_ = nullptr;  // owned (a copy), freed with the pool or when replaced
  bool retired_ = false;
  std::size_t open_ = 0;
  std::size_t reserved_ = 0;    // slots promised to woken waiters that have not connected yet
  std::size_t connecting_ = 0;  // connections opened whose connect has not ended
  std::vector<handle> idle_;    // most recently used last
  std::deque<waiter*> waiters_;
};

}  // namespace gateway
