#pragma once
// One HTTP call as a state machine on its I/O thread, without a stack of its own: acquire a connection
// (idle, new, or wait for one at the pool's cap), write the request, read the answer, and report the
// result to the sink exactly once. The cancel_source hook closes whatever is pending, so every step ends
// promptly once the call is cancelled. Errors are results (call_result), never exceptions.
//
// The exchange costs two system calls when all goes well: the request is sent at once (`send`; Asio's
// async_write only for what the socket does not take), and the answer is read when epoll reports it
// (read_readiness), until nothing more is waiting, never speculatively before it can be there.
//
// Ownership: start() allocates the call and nobody else holds it; only its own pending handlers (a
// connect, write, readiness wait or timer it started) refer to it. It frees itself in one place,
// free_if_done(): once it has reported, and the connect timer's handler (the one handler that can
// outlive the report) has run.
//
// Include only from downstream implementation files: it pulls in Beast (connection_pool).

#include "gateway/config/config.hpp"
#include "gateway/core/cancel_source.hpp"
#include "gateway/downstream/connection_pool.hpp"
#include "gateway/downstream/downstream.hpp"
#include "gateway/downstream/response_parser.hpp"

#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gateway {

class request_head;

class http_call final : public read_readiness::listener {
 public:
  // Starts a call on the current thread's `pool` (the request's I/O thread). Reports through `sink`
  // exactly once, possibly before returning (already cancelled, host not resolved); copies what it needs
  // from `request`. `settings` and `pool` must outlive the call.
  static void start(const request_head& head, const downstream_settings& settings, connection_pool& pool,
                    const call_request& request, call_sink& sink, std::size_t index);

 private:
  // Every state but `finished` belongs to the call's one attempt (one exchange on one connection); the
  // retry on a new connection goes back to `acquiring`. When several attempts come (retries, hedges),
  // these become an attempt's own state and `finished` the call's. Transitions: legal(), enter().
  enum class state : std::uint8_t {
    acquiring,          // looking for a connection: an idle one, a free slot, or a place in the queue
    queued,             // at the pool's cap: waiting for a connection or a slot (timer_, waiter_)
    connecting,         // connecting a new connection (conn_; timer_ when the connect timeout is armed)
    connect_timed_out,  // the connect timer closed the socket; the connect's completion is still to come
    writing,            // sending the request (conn_, parser_; async_write for what `send` did not take)
    reading,            // the request is sent: reading the answer as it arrives (conn_, parser_)
    finished,           // reported to the sink; at most the connect timer's handler is still to run
  };

  http_call(const request_head& head, const downstream_settings& settings, connection_pool& pool,
            const call_request& request, call_sink& sink, std::size_t index);
  ~http_call() = default;

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
  bool charge_body();
  void end_of_stream();
  void answered(bool drained);
  void read_failed(const boost::system::error_code& ec);
  void exchange_failed(const boost::system::error_code& ec, const char* what);
  void fail(const boost::system::error_code& ec, const char* what);
  void finish(call_result&& result, clock::time_point now);
  void free_if_done();
  void close_socket();

  // The call, across attempts.
  const downstream_settings& settings_;
  connection_pool& pool_;
  call_sink& sink_;
  std::size_t index_;
  cancel_source& cancel_;
  clock::time_point deadline_;
  clock::time_point started_;
  std::string_view head_;  // in head_inline_, or head_long_ when it does not fit
  std::string head_long_;
  char head_inline_[256];
  std::size_t charged_ = 0;  // bytes of the answer's body buffer counted against the memory budget

  // The current attempt (per-state data says which states it belongs to).
  state state_ = state::acquiring;
  std::optional<cancel_source::scoped_hook> hook_;  // what a cancellation interrupts in this state (enter())
  // queued: the wait's deadline timer; from connecting on: the connect timer. Present until its handler
  // has run (the call is not freed before).
  std::optional<boost::asio::steady_timer> timer_;
  connection_pool::waiter waiter_;         // queued: the call's place in the pool's queue
  connection_pool::handle conn_;           // connecting through reading
  std::optional<response_parser> parser_;  // writing and reading (the last attempt's, after it)
  bool contacted_ = false;                 // a connection to the downstream was used or opened
  bool input_waiting_ = false;             // writing: input arrived before the request was all sent
};

}  // namespace gateway
