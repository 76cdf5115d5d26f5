#pragma once
// One HTTP call: the request's bytes, its deadline and its report to the fan-out, made by one or more
// attempts (http_attempt) on its I/O thread's lane, at most two at a time:
// - a retry, after an attempt failed in a way worth another try (retry_settings: a failed connect, a
//   connection that ended before any of the answer, a status in on_status; for a call that is not
//   idempotent, a failed connect only), after a jittered backoff, when time is left and the lane's retry
//   budget allows;
// - a hedge, when the first attempt has not answered after the hedge delay and the lane's hedge budget
//   allows (hedge_settings; off by default; idempotent calls only).
// The first good answer, or answer the call passes to the client (call_request::pass), wins: it is
// reported at once and the other attempt is cancelled (its socket closed). Otherwise the failure of the
// attempt that ended last is reported, once no attempt is left and no retry follows.
//
// States (state_; transitions: legal(), enter()):
//   attempting   no timer in use: one or two attempts live (or the call launching one, or reporting)
//   hedge_due    the first attempt live; the timer set for the hedge delay
//   backing_off  no attempt live; the timer set for a retry's backoff (the retry holds a place in the
//                lane's retry budget from here)
//   reported     the sink has the result; attempts that lost may still be ending (each cancelled), and
//                timer handlers may still run; then the call frees itself
// Its one timer serves the hedge delay and the retry backoff, one at a time; a handler that runs after
// its wait was replaced (a backoff after a hedge delay) is told apart by its arming and does nothing.
//
// Ownership: start() allocates the call; only its attempts, its timer's handlers and, until the report,
// its hook in the fan-out's cancel_source refer to it. It frees itself in one place, free_if_done(): once
// it has reported, no attempt is live, its member attempt has ended and no timer handler is still to run.
// The member (first_) holds one attempt at a time (the first; a retry once the first has ended), so a
// call that makes one attempt is one allocation; a hedge beside it, or a retry while the first still
// ends, is allocated. The member can outlive its report (its connect timer's handler is still to run):
// it asks the call to end it (first_attempt_ended(), its last act), where a heap attempt deletes itself.
// Wake-ups: an attempt reports to the call as the last act of its handler (attempt_done()); the call
// launches an attempt (which may report at once, inside begin()) and reports to the fan-out's sink only as
// the last act of the handler that does it. The report may resume the fan-out inline, which may end the
// request; before it the call leaves the fan-out's cancel_source and lets go of its trace, so that nothing
// of the fan-out is touched after the report. The cancel hook only cancels (its attempts, its timer): what
// they end reaches the call later, from the queue, never inside the fan-out's cancel loop.
//
// Traced (call_request::trace), each attempt has a span of its own (call_trace.hpp) and sends its
// traceparent: the first attempt's slot writes it into the call's head, the other slot into a copy (a
// hedge runs beside the first attempt). At its report the call ends the spans of attempts still running
// and lets go of the trace, which belongs to the fan-out.
//
// Include only from downstream implementation files: it pulls in Beast (connection_pool).

#include "gateway/downstream/downstream.hpp"
#include "gateway/downstream/http_attempt.hpp"
#include "gateway/downstream/http_endpoints.hpp"

#include <boost/asio/steady_timer.hpp>

#include <array>
#include <cassert>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace gateway {

class request_head;

class http_call {
 public:
  // Starts a call on the current thread's `lane`. Reports through `sink` exactly once, possibly before
  // returning; copies what it needs from `request`. `lane` must outlive the call. `lead`: the key of the
  // calls this one leads (call_coalescer), told its result before its sink; empty: it leads nobody.
  static void start(const request_head& head, http_endpoints& lane, const call_request& request,
                    call_sink& sink, std::size_t index, std::string lead = {});

  // An attempt's report: its last act (see http_attempt).
  void attempt_done(std::size_t slot, http_attempt::report&& report);
  // The member attempt (first_) is done: the call ends it, and may free itself. The attempt's last act.
  void first_attempt_ended();

 private:
  enum class state : std::uint8_t { attempting, hedge_due, backing_off, reported };  // see above

  http_call(const request_head& head, http_endpoints& lane, const call_request& request, call_sink& sink,
            std::size_t index, std::string lead);
  ~http_call() { assert(!first_); }

  static constexpr bool legal(state from, state to);
  void enter(state next);
  void start_attempt(bool retry);
  void start_hedge();
  // launch()'s answer; `cancelled` is never one: start_attempt() finds the call cancelled before it, and
  // report_unsent() takes all three reasons an attempt did not start.
  enum class launched : std::uint8_t { yes, no_address, refused, cancelled };
  launched launch(std::size_t slot, clock::time_point now, const http_endpoints::endpoint* avoid, bool hedge);
  void report_unsent(bool reserved, launched why, clock::time_point now);
  std::string_view traced_head(std::size_t slot, clock::time_point now, const http_endpoints::endpoint& to,
                               bool hedge);
  bool timer_set() const { return state_ == state::hedge_due || state_ == state::backing_off; }
  void arm_timer(state next, clock::time_point due);
  void timer_fired(const boost::system::error_code& ec, unsigned arming);
  bool worth_retry(const http_attempt::report& report) const;
  void cancel_attempts(cancel_reason why);
  void report(call_result&& result, clock::time_point now);
  void free_if_done();

  http_endpoints& lane_;
  call_sink& sink_;  // the fan-out's, until the report
  std::size_t index_;
  cancel_source& cancel_;  // the fan-out's, until the report
  std::optional<cancel_source::scoped_hook> hook_;
  clock::time_point deadline_;
  clock::time_point started_;
  std::string_view head_;  // in head_inline_, or the rare part's head_long when it does not fit
  char head_inline_[256];
  answer_capture keep_;  // call_request::answer_fields and ::pass (in the configuration)
  call_trace* trace_;    // call_request::trace until the report; null: untraced
  // What few calls need, made when one does (so that a call and its first attempt stay one block small
  // enough for the allocator's per-thread cache).
  struct rare_part {
    std::string head_long;                      // the head, when longer than head_inline_
    std::string coalesce_key;                   // the share_key() of the calls it leads (call_coalescer)
    std::string traced_head;                    // traced: the head of an attempt in slot 1
    std::size_t traceparent_at = 0;             // traced: where the head's traceparent value starts
    std::array<std::size_t, 2> attempt_span{};  // traced: the span of the attempt in each slot
  };
  std::unique_ptr<rare_part> rare_;  // null: no long head, leads nobody, untraced
  rare_part& rare() {
    if (!rare_) rare_ = std::make_unique<rare_part>();
    return *rare_;
  }

  std::array<http_attempt*, 2> live_{};                  // attempts still to report, by slot
  std::array<http_endpoints::endpoint*, 2> endpoint_{};  // where each live attempt goes
  std::array<circuit_breaker::ticket, 2> ticket_{};      // what its endpoint's breaker allowed
  http_endpoints::endpoint* last_failed_ = nullptr;      // a retry avoids it (compared, never used)
  std::array<bool, 2> retry_slot_{};  // the attempt in that slot holds a place in the retry budget
  unsigned attempts_ = 0;             // started so far (the hedge not counted)
  state state_ = state::attempting;
  bool contacted_ = false;
  bool idempotent_;  // may be retried (beyond a failed connect) and hedged

  // The hedge delay or a retry's backoff, one at a time (hedge_due, backing_off); made at the first of them
  // (most calls have none).
  std::unique_ptr<boost::asio::steady_timer> timer_;
  unsigned timer_armings_ = 0;  // numbers the armings, for a handler that runs after a re-arm
  unsigned timer_waits_ = 0;    // handlers still to run

  std::optional<http_attempt> first_;  // the first attempt, or a retry made once it ended (see above)
};

}  // namespace gateway
