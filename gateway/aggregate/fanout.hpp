#pragma once
// Runs all calls of one request at once under the request's absolute deadline; in a graph route
// (aggregate_route::graph: `after`, `when`, `for_each`), each call as soon as what it needs has answered,
// and a for_each call once per element, in slots of their own (fanout_graph.cpp says how; a flat route
// pays nothing for it but a test of graph_).
// The answer may be decided before every call has finished, by the first call in the route's order that
// passed its answer to the client (passes_to_client) or is required and failed (a 502, 503 or 504):
// whichever arrives first, the same answers from the downstreams give the client the same answer, and a
// route lists first the call whose word should count (an authorising call, say). Once a call decides,
// the fan-out waits only for the calls listed before it that could still decide before it: those that
// pass statuses, and, before a passed answer, the required ones. Every other call still running is
// cancelled at once (its result: cancelled), as every call after the deciding one is. So a route without
// pass_status settles at once on a failed required call, as it always did, and a passed answer costs at
// most the wait for those few calls listed before it (at most until their deadline).
// A downstream's circuit breaker is asked before its call starts (an open one: the call ends at once as
// circuit_open) and told the outcome when it finishes.
// Each call runs on the caller's executor (the same I/O thread, so no locking): as a state machine
// (downstream::start, HTTP) or in a stackful coroutine of its own (SQL). A call's deadline is min(its
// timeout, the request deadline) and is enforced here, by one timer for the whole request: at a call's
// deadline its cancel_source fires, and the call only has to finish promptly then (a downstream's own
// timers serve its own steps: a connect timeout, a hedge delay, a retry's backoff, a bounded wait for a
// connection or a permit). At its deadline, or on cancel(), every unfinished call is cancelled; run()
// returns only after every call has finished, so no call outlives its request.
//
// States (state_; transitions: legal(), enter()):
//   idle        constructed, run() not called yet: cancel() records its reason, and every call starts
//               cancelled with it
//   starting    run() starts the calls in the route's order; a call may report inside its start (no
//               time left, a cached answer, an open breaker)
//   running     run() waits (wake_) for the last call, a call's end once the answer is decided, or the
//               earliest deadline of a call still running (timer_), and cancels what is due then
//   cancelling  cancel() cancels every unfinished call while run() waits; a call may report inside its
//               cancel hook
//   settled     every unfinished call has been cancelled (the answer is decided, cancel(), or a call
//               could not be started): run() waits for the last report
//   joining     every call has reported; run() waits for the handler of a timer wait that had expired
//               already (it can no longer be cancelled, and it touches this fan-out)
//   done        run() has returned the results
// Each call is pending until it reports (call_finished()), or never_started when starting it threw.
//
// Ownership: the caller owns the fan-out (on its coroutine's stack) and the fanout_request it passes to
// run(), which outlives run(). Every call points at this fan-out (its sink, its cancel_source, the request's
// data) until it has reported, and an expired wait's handler until it has run; run() waits for both, so the
// caller may destroy the fan-out as soon as run() returns. A call's answer buffer is counted against the
// memory budget until the fan-out is destroyed (held_bytes_).
//
// Wake-ups (wake_event): only run()'s coroutine waits, on wake_. A call's report, and the timer's handler,
// wake it through the I/O thread's queue (notify()), so it never runs inside a call's completion or inside
// cancel()'s loop (where a call may finish in its cancel hook): the fan-out never ends while one of its
// callers still runs. run() does not end before the timer's handler has run, unless it cancelled the wait
// (the handler then touches nothing). Inside run() itself (starting, and its own loops that cancel calls)
// nobody waits: a wake-up only makes run()'s next wait return at once.

#include "gateway/config/config.hpp"
#include "gateway/downstream/call_headers.hpp"
#include "gateway/downstream/downstream.hpp"
#include "gateway/observe/metrics.hpp"
#include "gateway/runtime/cancel_source.hpp"
#include "gateway/runtime/wake_event.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/container/small_vector.hpp>

#include <cstdint>
#include <memory>

#include <string_view>
#include <vector>

namespace gateway {

class answer_cache;

// Whether `result` is an answer `call` passes to the client (its pass_status lists the status it came
// with): then the client's whole answer.
bool passes_to_client(const call_settings& call, const call_result& result);

struct fanout_request {
  const aggregate_route* route = nullptr;
  const std::vector<downstream*>* targets = nullptr;  // aligned with route->calls
  const param_values* params = nullptr;               // aligned with route->params
  clock::time_point deadline;
  std::string_view request_id;
  std::string_view traceparent;  // sent by every call when the request is not traced
  // Traced: each call's spans (call_trace.hpp), aligned with route->calls; each call sends its own
  // traceparent. Null when the request is not traced.
  call_trace* call_traces = nullptr;
  const call_header_fields* headers = nullptr;  // aligned with route->calls; null: none
  std::string_view client_body;                 // the client's request body (calls with body: client)
  std::size_t thread_index = 0;
  std::size_t stack_size = 64 * 1024;
  thread_metrics* metrics = nullptr;   // the I/O thread's; null in tests
  const metric_set* series = nullptr;  // the configuration's rows (calls by downstream); null in tests
};

class fanout final : private call_sink {
 public:
  explicit fanout(const boost::asio::any_io_executor& ex) : ex_(ex), timer_(ex) {}
  fanout(const fanout&) = delete;
  fanout& operator=(const fanout&) = delete;
  ~fanout();

  // Called once. Rethrows (std::bad_alloc) when a call could not be started, after the started ones have
  // finished. Once the answer is decided (see above), the calls it no longer needs are cancelled.
  std::vector<call_result> run(const fanout_request& request, boost::asio::yield_context yield);

  // Cancels every unfinished call (from the same executor, e.g. when the client disconnects), while run()
  // waits; before run(), every call starts cancelled. The calls end promptly after it (some inside it).
  void cancel(cancel_reason why);

 private:
  enum class state : std::uint8_t { idle, starting, running, cancelling, settled, joining, done };
  // waiting: a call of a graph (or a for_each element) not started yet, for what it needs (fanout_graph.cpp)
  enum class call_state : std::uint8_t { pending, reported, never_started, waiting };
  struct graph_state;

  static constexpr bool legal(state from, state to);
  void enter(state next);
  call_request make_request(std::size_t index, std::string& target, std::string& body);
  void start_call(std::size_t index);
  void finish_unsent(std::size_t index, call_outcome outcome, const char* detail);
  bool serve_fresh(std::size_t index, answer_cache& cache, const call_request& call);
  void call_finished(std::size_t index, call_result&& result) override;
  void keep_or_serve_stale(std::size_t index, call_result& result, clock::time_point ended);
  void cancel_pending(cancel_reason why);
  bool settle_decided();
  void cancel_due();
  void wait_until(clock::time_point due);
  // Composition (fanout_graph.cpp): only for a route with aggregate_route::graph.
  void start_graph();
  void advance_graph();
  void begin_waiting_call(std::size_t index);
  void begin_for_each(std::size_t index);
  void start_items(std::size_t index);
  void finish_for_each(std::size_t index);
  void finish_waiting(cancel_reason why);
  void expire_waiting(clock::time_point now);
  bool resolve_values(std::size_t slot, std::string_view element);
  void render_header_templates(std::size_t slot);
  void graph_start_failed();
  std::string_view value_of(std::size_t slot, std::string_view name) const;
  clock::time_point begun(std::size_t slot) const;
  std::string_view rendered_headers(std::size_t slot) const;
  bool items_ran(std::size_t index) const;
  // The call a slot belongs to (its index among the route's calls): itself, or a for_each element's call.
  std::size_t owner_index(std::size_t slot) const {
    return slot < request_->route->calls.size() ? slot : request_->route->slot_owner[slot];
  }
  const call_settings& owner(std::size_t slot) const { return request_->route->calls[owner_index(slot)]; }

  boost::asio::any_io_executor ex_;
  state state_ = state::idle;
  cancel_reason cancelled_before_run_ = cancel_reason::none;  // idle: what cancel() said, for run()
  wake_event
      wake_;  // run() waits on it: the last call finished, a call ended while deciding, a deadline came
  // Set for the earliest deadline of a call still running; destroyed with this fan-out, which cancels a
  // wait still set (its handler then runs as aborted and touches nothing).
  boost::asio::steady_timer timer_;
  bool timer_waiting_ = false;  // a wait on timer_ whose handler will still touch this fan-out (see run())
  // Per call, sized once per run() (stable addresses while it runs); a route's handful of calls fits in
  // place, without an allocation.
  template <class T>
  using per_call = boost::container::small_vector<T, 8>;
  per_call<call_state> calls_;
  per_call<cancel_source> cancels_;
  clock::time_point started_;                  // when run() started the calls
  per_call<clock::time_point> deadlines_;      // min(call timeout, request deadline)
  per_call<circuit_breaker::ticket> tickets_;  // what each call's breaker allowed (to record the outcome)
  per_call<std::string> stale_keys_;           // each call's share_key(), for a downstream keeping answers
  std::vector<call_result> results_;
  std::size_t pending_ = 0;                  // calls still pending
  const fanout_request* request_ = nullptr;  // from starting to done
  std::size_t held_bytes_ = 0;  // answers' buffers counted against the memory budget until destroyed
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  // The first call in the route's order that decides the answer so far (see above); npos: none (yet).
  std::size_t decider_ = npos;
  bool decided_by_pass_ = false;  // decider_ passed its answer (else: a required call that failed)
  // A graph route's per-slot state (values taken from answers, rendered header fields, for_each progress);
  // null for a flat route, which therefore pays nothing for it.
  struct graph_deleter {
    void operator()(graph_state* g) const;  // fanout_graph.cpp, where graph_state is complete
  };
  std::unique_ptr<graph_state, graph_deleter> graph_;
  cancel_reason graph_cancel_ = cancel_reason::settled;  // why the waiting calls end, once settled
};

}  // namespace gateway
