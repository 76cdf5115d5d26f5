#include "gateway/aggregate/fanout.hpp"

#include "gateway/downstream/answer_fields.hpp"
#include "gateway/downstream/call_trace.hpp"
#include "gateway/downstream/failure_rule.hpp"
#include "gateway/downstream/http_result.hpp"
#include "gateway/downstream/share_key.hpp"
#include "gateway/runtime/memory_budget.hpp"

#include <spdlog/spdlog.h>
#include <boost/context/protected_fixedsize_stack.hpp>

#include <algorithm>
#include <cassert>

namespace gateway {

namespace net = boost::asio;

bool passes_to_client(const call_settings& call, const call_result& result) {
  return is_passed_answer(call.pass, result);
}

fanout::~fanout() {
  assert(state_ != state::cancelling && "a fan-out ended inside its own cancel loop");
  memory_budget::release(held_bytes_);
}

// The legal changes of state; any other is a bug:
//   idle       -> starting (run())
//   starting   -> running | settled (cancelled before run(), or a call could not be started)
//   running    -> cancelling (cancel()) | settled (the answer is decided) | joining | done (the last report)
//   cancelling -> settled (every unfinished call cancelled)
//   settled    -> joining | done (the last report)
//   joining    -> done (the timer's handler has run)
//   done       -> none
constexpr bool fanout::legal(state from, state to) {
  switch (from) {
    case state::idle:
      return to == state::starting;
    case state::starting:
      return to == state::running || to == state::settled;
    case state::running:
      return to == state::cancelling || to == state::settled || to == state::joining || to == state::done;
    case state::cancelling:
      return to == state::settled;
    case state::settled:
      return to == state::joining || to == state::done;
    case state::joining:
      return to == state::done;
    case state::done:
      return false;
  }
  return false;
}

// The one place the state changes (asserting that the change is legal()).
void fanout::enter(state next) {
  assert(legal(state_, next));
  state_ = next;
}

void fanout::cancel(cancel_reason why) {
  switch (state_) {
    case state::idle:
      if (cancelled_before_run_ == cancel_reason::none) cancelled_before_run_ = why;
      return;
    case state::running:
      // A call may finish inside its cancel hook; while this loop runs, call_finished() defers the wake-up
      // of run() (see there), so this fan-out outlives the loop.
      enter(state::cancelling);
      cancel_pending(why);
      enter(state::settled);
      // A graph's waiting calls end in run(), which may be waiting on none of the calls running: woken
      // through the queue, like any report.
      if (graph_) {
        graph_cancel_ = why;
        wake_.notify();
      }
      return;
    case state::starting:    // not expected (run() itself runs): nobody waits, a wake-up only marks
    case state::cancelling:  // not expected (from a cancel hook): wake-ups stay deferred
      return cancel_pending(why);
    case state::settled:  // every unfinished call is cancelled already
    case state::joining:  // every call has reported
    case state::done:
      return;
  }
}

void fanout::cancel_pending(cancel_reason why) {
  for (std::size_t i = 0; i < cancels_.size(); ++i) {
    if (calls_[i] == call_state::pending) cancels_[i].request_cancel(why);
  }
}

call_request fanout::make_request(std::size_t index, std::string& target, std::string& body) {
  const auto& request = *request_;
  const std::size_t call_index = owner_index(index);
  const auto& call = request.route->calls[call_index];
  const auto value_of = [&](const std::string& name) -> std::string_view {
    if (graph_ && !call.references.empty()) {  // a value of an answer ("{call.field}", "{item.x}")
      if (auto v = this->value_of(index, name); v.data() != nullptr) return v;
    }
    const auto& params = request.route->params;
    for (std::size_t p = 0; p < params.size(); ++p) {
      if (params[p].name == name) return (*request.params)[p];
    }
    return {};
  };
  if (!call.path.pieces().empty()) target.reserve(64);
  call.path.expand(target, value_of);
  call_request req;
  req.method = call.method;
  req.idempotent = call.idempotent;
  if (call.body == call_body::client) {
    req.body = request.client_body;
  } else if (call.body == call_body::built) {
    call.built_body.expand(body, value_of);
    req.body = body;
  }
  req.target = target;
  req.params = request.params;
  req.param_specs = &request.route->params;
  req.deadline = deadlines_[index];
  req.now = graph_ ? begun(index) : started_;
  req.request_id = request.request_id;
  if (request.call_traces != nullptr && index == call_index) {
    req.trace = &request.call_traces[index];
    req.traceparent = req.trace->traceparent();
  } else if (request.call_traces != nullptr) {  // a for_each element: under its call's span, without its own
    req.traceparent = request.call_traces[call_index].traceparent();
  } else {
    req.traceparent = request.traceparent;
  }
  if (request.headers != nullptr) req.headers = request.headers[call_index].headers;
  if (graph_ && !call.header_templates.empty()) req.headers = rendered_headers(index);
  req.sql = (*request.targets)[call_index]->query();
  if (!call.effective_response_headers.empty()) req.answer_fields = &call.effective_response_headers;
  if (!call.pass.empty()) req.pass = &call.pass;
  req.thread_index = request.thread_index;
  req.cancel = &cancels_[index];
  return req;
}

void fanout::call_finished(std::size_t index, call_result&& result) {
  assert(calls_[index] == call_state::pending && "a call reported twice, or after it failed to start");
  if (result.outcome == call_outcome::cancelled && cancels_[index].reason() == cancel_reason::deadline) {
    result.outcome = call_outcome::timeout;
    result.detail = "deadline";
  }
  const std::size_t call_index = owner_index(index);
  const auto& call = request_->route->calls[call_index];
  // When it ended, from the reading the call took for its latency (no clock reading of its own here).
  const auto ended = (graph_ ? begun(index) : started_) + result.latency;
  if (tickets_[index].allowed) {
    // Judged by the downstream's failure rule (failure_rule.hpp), as its endpoints' breakers and outlier
    // ejection judge attempts: by default a 4xx is the downstream answering for its client (a bad token, an
    // unknown item) and counts neither way (counted, any client could open the circuit for every other
    // one), and so does a call that never reached the downstream.
    auto* breaker = (*request_->targets)[call_index]->breaker();
    breaker->record(tickets_[index], breaker_verdict(breaker->failures(), result), ended);
  }
  // A for_each call's own slot is counted only when no element was sent (its elements are the calls).
  if (request_->series && !(graph_ && index == call_index && call.for_each && items_ran(index)))
    request_->series->call_done(request_->thread_index, call.downstream_index, result.label_index(),
                                result.latency);
  // A passed answer is the downstream's word, never replaced by a stale one.
  const bool passed = request_->route->passes_status && passes_to_client(call, result);
  if (!passed && !(call.for_each && index == call_index)) keep_or_serve_stale(index, result, ended);
  if ((passed || (call.required && !result.has_body() && !result.skipped())) && index == call_index &&
      index < decider_) {
    decider_ = index;
    decided_by_pass_ = passed;
  }
  // Held until the answer is merged (this fan-out's end), against the process's memory budget.
  const auto bytes = result.body.text.capacity();
  memory_budget::force_charge(bytes);
  held_bytes_ += bytes;
  results_[index] = std::move(result);
  calls_[index] = call_state::reported;
  // Once a call decides the answer, run() cancels what the answer no longer needs and answers as soon as
  // nothing listed before the deciding call could still decide, instead of waiting for the deadline; it
  // looks again at every call's end until it has settled. Otherwise only the last call wakes it.
  // A graph's run() also starts what the end of a call lets start (fanout_graph.cpp).
  if (--pending_ != 0 && !graph_ &&
      (decider_ == npos || (state_ != state::starting && state_ != state::running)))
    return;
  // Through the queue: run() may go on to end the request and destroy this fan-out, never under its
  // caller (a call's completion, cancel()'s loop). When run() itself is the caller, starting or in its own
  // loops, it is not waiting: this only marks its next wait.
  wake_.notify();
}

// stale_if_error and cache: a good answer is kept under its share_key() (what the call sent); a failed
// call (not one cancelled because nobody needs it any more) gets the last good answer for its key instead,
// if there is one young enough. A call answered from the store has no key (nothing to keep again). An
// answer that varies on more than the key (call_result::shareable) is not kept.
void fanout::keep_or_serve_stale(std::size_t index, call_result& result, clock::time_point ended) {
  auto* cache = (*request_->targets)[owner_index(index)]->stale();
  const auto& key = stale_keys_[index];
  if (cache == nullptr || key.empty()) return;
  if (result.ok()) {
    if (!result.shareable) return;
    // Its kept fields are stored with it, its cookies not: a cookie is meant for one client.
    if (result.headers.empty())
      return cache->put(key, result.body, ended, result.fresh_for, {}, result.status);
    return cache->put(key, result.body, ended, result.fresh_for, without_set_cookie(result.headers),
                      result.status);
  }
  if (result.outcome == call_outcome::cancelled) return;
  if (auto body = cache->get(key, ended)) {
    result.body = std::move(*body);
    result.outcome = call_outcome::stale;
    result.detail = "stale";
  }
}

// A call decides the answer (decider_): the calls still running that could decide before it (listed
// before it, and passing statuses, or required while a passed answer decides) are waited for, every
// other is cancelled now. True when none is waited for: the answer is decided, every unfinished call is
// cancelled. Called by run() (running): a call finishing in its cancel hook only marks run()'s next wait.
bool fanout::settle_decided() {
  const auto& calls = request_->route->calls;
  bool waiting = false;
  // decider_ only moves earlier, also inside this loop (a required call cancelled here decides then).
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (calls_[i] != call_state::pending) continue;
    if (i < decider_ && (!calls[i].pass.empty() || (calls[i].required && decided_by_pass_))) {
      waiting = true;
      continue;
    }
    cancels_[i].request_cancel(cancel_reason::settled);
  }
  // A for_each call's elements: cancelled with their call (a call waited for above is no for_each one
  // in practice, but its elements then run on).
  for (std::size_t i = calls.size(); i < calls_.size(); ++i) {
    if (calls_[i] != call_state::pending) continue;
    const auto call = request_->route->slot_owner[i];
    if (call < decider_ && (!calls[call].pass.empty() || (calls[call].required && decided_by_pass_))) {
      waiting = true;
      continue;
    }
    cancels_[i].request_cancel(cancel_reason::settled);
  }
  return !waiting;
}

// Cancels the calls whose deadline has passed. Called by run() (running), as settle_decided().
void fanout::cancel_due() {
  const auto now = clock::now();
  for (std::size_t i = 0; i < calls_.size(); ++i) {
    if (calls_[i] == call_state::pending && deadlines_[i] <= now)
      cancels_[i].request_cancel(cancel_reason::deadline);
  }
  if (graph_) expire_waiting(now);
}

void fanout::wait_until(clock::time_point due) {
  timer_waiting_ = true;
  timer_.expires_at(due);  // no wait is set here (see run()): this cancels nothing
  timer_.async_wait([this](const boost::system::error_code& ec) {
    // Cancelled: run() counted this wait off when it cancelled it and may have ended since, freeing this
    // fan-out, so nothing of it is touched.
    if (ec == net::error::operation_aborted) return;
    // Expired: run() does not end before this handler has run (see its end), so this fan-out is alive.
    timer_waiting_ = false;
    wake_.notify();
  });
}

// A call answered without I/O (no time left, an open circuit): out of start_call, whose frame is on the
// request's coroutine stack under every call's start.
[[gnu::noinline]] void fanout::finish_unsent(std::size_t index, call_outcome outcome, const char* detail) {
  call_result result;
  result.outcome = outcome;
  result.detail = detail;
  call_finished(index, std::move(result));
}

// The answer kept fresh by the downstream's cache (true), or none (false). Out of start_call, as above.
[[gnu::noinline]] bool fanout::serve_fresh(std::size_t index, answer_cache& cache, const call_request& call) {
  answer_cache::fresh_fields kept;
  auto fresh = cache.get_fresh(stale_keys_[index], call.now, &kept);
  if (!fresh) return false;
  stale_keys_[index].clear();
  call_result result;
  result.outcome = call_outcome::ok;
  result.detail = "cached";
  result.body = std::move(*fresh);
  result.contacted = false;
  result.from_cache = true;
  result.status = kept.status;
  result.latency = clock::now() - call.now;  // the lookup's, from the call's start as for a call
  if (call.answer_fields != nullptr) result.headers = std::move(kept.text);  // only to a route that asks
  result.age = kept.age;
  call_finished(index, std::move(result));
  return true;
}

void fanout::start_call(std::size_t index) {
  const auto& request = *request_;
  if (deadlines_[index] <= (graph_ ? begun(index) : started_)) {  // no time left: don't bother the downstream
    return finish_unsent(index, call_outcome::timeout, "no time left");
  }
  const auto& settings = owner(index);
  auto* target = (*request.targets)[owner_index(index)];
  // start() has used the target by the time it returns (an HTTP call copies it into its request head), so
  // one buffer per thread serves every call without an allocation each.
  thread_local std::string target_text;
  thread_local std::string body_text;
  target_text.clear();
  body_text.clear();
  const auto call = make_request(index, target_text, body_text);
  if (auto* cache = target->stale(); cache != nullptr && call.method == "GET") {  // only reads share answers
    stale_keys_[index] = share_key(call);
    if (serve_fresh(index, *cache, call)) return;  // without a call
  }
  if (auto* breaker = target->breaker()) {
    tickets_[index] = breaker->allow(call.now);
    if (!tickets_[index].allowed)  // open: falls back at once, no I/O
      return finish_unsent(index, call_outcome::circuit_open, "circuit open");
  }
  if (target->start(call, *this, index)) return;
  // A downstream that needs a stack (SQL): its own coroutine.
  net::spawn(
      ex_, std::allocator_arg, boost::context::protected_fixedsize_stack(request.stack_size),
      [this, index, target, &settings, &request](net::yield_context child) {
        if (request.metrics) request.metrics->coroutine_started();
        call_result result;
        try {
          std::string expanded;
          std::string body;
          result = target->call(make_request(index, expanded, body), child);
        } catch (const std::exception& e) {
          spdlog::error("call '{}' failed unexpectedly: {}", settings.name, e.what());
          result = call_result{};
          result.detail = "internal error";
        }
        if (request.metrics) request.metrics->coroutine_ended();
        call_finished(index, std::move(result));
      },
      [](std::exception_ptr e) {
        if (e) spdlog::critical("call coroutine ended with an exception");
      });
}

std::vector<call_result> fanout::run(const fanout_request& request, net::yield_context yield) {
  // Slots: one per call, then a graph's for_each elements (aggregate_route::slots).
  const std::size_t n = std::max(request.route->calls.size(), request.route->slots);
  results_.clear();
  results_.resize(n);
  calls_.assign(n, call_state::pending);
  tickets_.assign(n, circuit_breaker::ticket{});
  stale_keys_.clear();
  stale_keys_.resize(n);
  cancels_.clear();
  cancels_.resize(n);
  pending_ = n;
  started_ = clock::now();  // one reading serves every call's start
  deadlines_.clear();
  request_ = &request;
  for (const auto& call : request.route->calls) {
    deadlines_.push_back(call.timeout ? std::min(request.deadline, started_ + *call.timeout)
                                      : request.deadline);
  }
  deadlines_.resize(n, request.deadline);  // a graph's for_each elements: set as each starts
  const bool cancelled = cancelled_before_run_ != cancel_reason::none;
  if (cancelled) {
    for (auto& c : cancels_) c.request_cancel(cancelled_before_run_);
  }

  decider_ = npos;
  decided_by_pass_ = false;
  enter(state::starting);
  // A call that cannot be started (out of memory, or of stack mappings) fails the request, but only once
  // the calls already started have been cancelled and have finished: they point at this fan-out.
  std::exception_ptr start_failure;
  if (request.route->graph) {
    try {
      start_graph();  // the calls that need nothing; the others wait (fanout_graph.cpp)
    } catch (...) {
      start_failure = std::current_exception();
      graph_start_failed();
    }
  } else {
    for (std::size_t i = 0; i < n && !start_failure; ++i) {
      try {
        start_call(i);
      } catch (...) {
        start_failure = std::current_exception();
        for (std::size_t j = i; j < n; ++j) {
          if (calls_[j] != call_state::pending) continue;
          calls_[j] = call_state::never_started;
          --pending_;
        }
      }
    }
  }
  if (start_failure) cancel_pending(cancel_reason::settled);
  enter(cancelled || start_failure ? state::settled : state::running);
  if (graph_ && state_ == state::settled)
    finish_waiting(cancelled ? cancelled_before_run_ : cancel_reason::settled);

  // One timer enforces every call's deadline: this fan-out waits until the earliest deadline of a call
  // still running, cancels the calls whose deadline has passed, and waits again. The last call to finish
  // wakes it for good. Calls finish promptly once cancelled (their socket or timer is cancelled).
  while (pending_ > 0) {
    if (state_ == state::running) {  // settled: every unfinished call is cancelled, none has a deadline due
      auto next = clock::time_point::max();
      for (std::size_t i = 0; i < n; ++i) {
        if ((calls_[i] == call_state::pending || calls_[i] == call_state::waiting) &&
            !cancels_[i].cancelled())
          next = std::min(next, deadlines_[i]);
      }
      // In a flat route the calls still running only become fewer, so `next` only moves later: a wait
      // already set is due no later than it, and is left alone. If it expires first, nothing is due yet and
      // it is set again. A graph starts calls as it goes, each with its own timeout from its start, which
      // may fall before the wait set: that wait is cancelled (its handler then touches nothing) and set
      // again for `next`. One that has expired already cannot be cancelled; its handler wakes run(), which
      // sets the wait then.
      if (graph_ && timer_waiting_ && next < timer_.expiry() && timer_.cancel() != 0) timer_waiting_ = false;
      if (next != clock::time_point::max() && !timer_waiting_) wait_until(next);
    }
    wake_.wait(yield);
    if (pending_ == 0) break;
    if (state_ == state::settled) {
      // Every unfinished call is cancelled: only the last report counts. A graph's calls still waiting
      // end now, never sent (cancel() only marks them: it may run inside another call's completion).
      if (graph_) finish_waiting(graph_cancel_);
      continue;
    }
    if (decider_ != npos && settle_decided()) {
      enter(state::settled);
      if (graph_) finish_waiting(cancel_reason::settled);
      continue;
    }
    cancel_due();
    if (graph_ && state_ == state::running) {
      try {
        advance_graph();
      } catch (...) {  // as a call that cannot be started above: the request fails once the others end
        start_failure = std::current_exception();
        graph_start_failed();
        enter(state::settled);
      }
    }
  }
  // A wait still set is cancelled; its handler runs later as aborted. One that has expired already can no
  // longer be cancelled (timer_.cancel() counts none): its handler is queued and will touch this fan-out,
  // which therefore waits for it before it ends.
  if (timer_waiting_ && timer_.cancel() != 0) timer_waiting_ = false;
  if (timer_waiting_) {
    enter(state::joining);
    while (timer_waiting_) wake_.wait(yield);
  }
  enter(state::done);
  if (start_failure) std::rethrow_exception(start_failure);
  return std::move(results_);
}

}  // namespace gateway
