#pragma once
// One attempt of an HTTP call (http_call) as a state machine on its I/O thread, without a stack of its own:
// acquire a connection from the lane's pool (idle, new, or wait for one at the pool's cap), write the
// request, read the answer, and report to the call exactly once. Its own cancel_source (fired by the call:
// the fan-out's cancellation, or another attempt's good answer) closes whatever is pending, so every step
// ends promptly. Errors are results (call_result), never exceptions.
//
// The exchange costs two system calls when all goes well: the request is sent at once (`send`; Asio's
// async_write only for what the socket does not take), and the answer is read when epoll reports it
// (read_readiness), until nothing more is waiting, never speculatively before it can be there. A pooled
// connection the downstream closed while it idled is replaced once within the attempt (retry_policy).
//
// An https downstream's connection takes a small path of its own (http_attempt_tls.cpp): after the
// connect, a TLS handshake, timed by the connect timeout together with the connect and bounded by the
// deadline; then the request is written and the answer read through the connection's TLS stream (Asio's
// async operations), into the same parser. A plain connection never enters it: one test of a null
// pointer where the paths part.
//
// Ownership: the call creates the attempt and nobody else holds it; only its own pending handlers (a
// connect, TLS handshake, write, readiness wait, TLS read or timer it started) refer to it. It frees itself
// in one place, free_if_done(): once it has reported, and the connect timer's handler (the one handler that
// can outlive the report) has run. Reporting is its last act (the call may end then). The call's first
// attempt is a member of the call (one allocation per call, not two): instead of deleting itself it then
// asks the call to end it (http_call::first_attempt_ended()), and the call stays until it has.
//
// Include only from downstream implementation files: it pulls in Beast (connection_pool).

#include "gateway/config/config.hpp"
#include "gateway/downstream/connection_pool.hpp"
#include "gateway/downstream/downstream.hpp"
#include "gateway/downstream/response_parser.hpp"
#include "gateway/runtime/cancel_source.hpp"

#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace gateway {

class http_call;

class http_attempt final : public read_readiness::listener {
 public:
  // What the attempt reports: its result (latency from the attempt's start) and, for a failure, the kind
  // that decides whether it may be retried: a connect that failed, a connection that ended (reset,
  // closed) before any of the answer arrived, or anything else (a status is judged by the call).
  struct report {
    enum class failure : std::uint8_t { other, connect, reset };
    call_result result;
    failure kind = failure::other;
    clock::time_point ended;  // when the attempt ended (the call's clock reading for what follows)
  };

  // An attempt on `pool` for `call`, which it reports to as attempt `slot`; begin() starts it and may
  // report before it returns (so it is the caller's last act). `head` (the request bytes) and `pool`
  // must outlive it; so must what `keep` points to (the fields of a 2xx answer it keeps, and the statuses
  // it passes with their fields; see answer_capture). `member`: the call's member for its first attempt,
  // made there (empty until then; the call ends it at first_attempt_ended()); null: the attempt is
  // allocated.
  static http_attempt* create(http_call& call, std::optional<http_attempt>* member, std::size_t slot,
                              std::string_view head, connection_pool& pool, std::size_t max_response_bytes,
                              const answer_capture& keep, clock::time_point deadline, clock::time_point now);
  void begin() { acquire(true); }

  // Public for std::optional alone: only create() can make the key.
  class key {
    key() = default;
    friend class http_attempt;
  };
  http_attempt(key, http_call& call, bool in_call, std::size_t slot, std::string_view head,
               connection_pool& pool, std::size_t max_response_bytes, const answer_capture& keep,
               clock::time_point deadline, clock::time_point now);
  ~http_attempt() = default;

  // Fired by the call; the attempt then ends promptly.
  cancel_source& cancel() { return cancel_; }

 private:
  // The exchange on one connection; the replacement of a stale pooled connection goes back to
  // `acquiring`. Transitions: legal(), enter().
  enum class state : std::uint8_t {
    acquiring,          // looking for a connection: an idle one, a free slot, or a place in the queue
    queued,             // at the pool's cap: waiting for a connection or a slot (timer_, waiter_)
    connecting,         // connecting a new connection (conn_; timer_ when the connect timeout is armed)
    handshaking,        // https: the TLS handshake on a new connection (conn_, its tls; timer_ as above)
    connect_timed_out,  // the connect timer closed the socket; the connect's (or handshake's) completion
                        // is still to come
    writing,            // sending the request (conn_, parser_; async_write for what `send` did not take)
    reading,            // the request is sent: reading the answer as it arrives (conn_, parser_)
    finished,           // reported to the call; at most the connect timer's handler is still to run
  };

  static constexpr bool legal(state from, state to);
  void enter(state next);
  void acquire(bool reuse);
  void wait_for_connection();
  void waited();
  void exchange(connection_pool::handle conn);
  void connect();
  void connect_timer_ended(const boost::system::error_code& ec);
  void connected(boost::system::error_code ec);
  void write();
  void written(const boost::system::error_code& ec);
  void on_readable(const boost::system::error_code& ec) override;
  static boost::beast::flat_buffer& read_scratch();
  bool consume_input(boost::beast::flat_buffer& buffer, bool drained);
  // https (http_attempt_tls.cpp).
  void handshake();
  void handshaken(boost::system::error_code ec);
  void tls_write();
  void tls_read();
  void tls_readable(const boost::system::error_code& ec, std::size_t bytes);
  bool charge_body();
  void end_of_stream();
  void answered(bool drained);
  void read_failed(const boost::system::error_code& ec);
  void exchange_failed(const boost::system::error_code& ec, const char* what);
  void fail(const boost::system::error_code& ec, const char* what, bool connecting = false);
  void finish(call_result&& result, clock::time_point now);
  void free_if_done();
  void close_socket();

  http_call& call_;
  std::string_view head_;  // the request's bytes, in the call
  connection_pool& pool_;
  std::size_t max_response_bytes_;
  answer_capture keep_;
  cancel_source cancel_;
  clock::time_point deadline_;
  clock::time_point started_;
  std::size_t charged_ = 0;  // bytes of the answer's body buffer counted against the memory budget
  std::uint8_t slot_;
  bool in_call_;                                      // the call's member (create()), not allocated
  report::failure failure_ = report::failure::other;  // the kind of the failure being reported
  bool contacted_ = false;                            // a connection to the downstream was used or opened
  bool input_waiting_ = false;  // writing: input arrived before the request was all sent

  // Per state (the comments say which states each belongs to).
  state state_ = state::acquiring;
  std::optional<cancel_source::scoped_hook> hook_;  // what a cancellation interrupts in this state (enter())
  // queued: the wait's deadline timer; from connecting on: the connect timer. Made when needed (an
  // attempt on an idle pooled connection has none); present until its handler has run (the attempt is
  // not freed before).
  std::unique_ptr<boost::asio::steady_timer> timer_;
  connection_pool::waiter waiter_;         // queued: the attempt's place in the pool's queue
  connection_pool::handle conn_;           // connecting through reading
  std::optional<response_parser> parser_;  // writing and reading (the last exchange's, after it)
};

}  // namespace gateway
