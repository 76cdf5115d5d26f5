#include "gateway/downstream/http_call.hpp"

#include "gateway/downstream/call_trace.hpp"
#include "gateway/downstream/failure_rule.hpp"
#include "gateway/downstream/http_result.hpp"
#include "gateway/downstream/request_head.hpp"
#include "gateway/trace/span_attributes.hpp"

#include <boost/asio/error.hpp>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <utility>

namespace gateway {

namespace net = boost::asio;
using boost::system::error_code;

// A call and its first attempt are one allocation. glibc's per-thread cache serves blocks of up to 1,032
// bytes without the arena's slower path: a call larger than that cost more than the allocation it saves
// (its rare_part keeps what few calls need out of it).
static_assert(sizeof(http_call) <= 1032, "http_call outgrew the allocator's per-thread cache");

void http_call::start(const request_head& head, http_endpoints& lane, const call_request& request,
                      call_sink& sink, std::size_t index, std::string lead) {
  (new http_call(head, lane, request, sink, index, std::move(lead)))
      ->start_attempt(false);  // last: it may report
}

http_call::http_call(const request_head& head, http_endpoints& lane, const call_request& request,
                     call_sink& sink, std::size_t index, std::string lead)
    : lane_(lane),
      sink_(sink),
      index_(index),
      cancel_(*request.cancel),
      deadline_(request.deadline),
      started_(request.now),
      keep_{request.answer_fields, request.pass},
      trace_(request.trace),
      idempotent_(request.idempotent) {
  if (!lead.empty()) rare().coalesce_key = std::move(lead);
  const std::size_t size = head.size(request);
  char* out = head_inline_;
  if (size > sizeof head_inline_) {
    rare().head_long.resize(size);
    out = rare_->head_long.data();
  }
  const auto traceparent_at = head.write(request, out);
  head_ = std::string_view(out, size);
  if (trace_ != nullptr) {
    assert(traceparent_at != request_head::no_traceparent);
    rare().traceparent_at = traceparent_at;
    const auto& settings = lane_.settings();
    trace_->set_url(span_attributes::full_url(
        (settings.tls.enabled ? "https://" : "http://") + host_field_value(settings) + settings.base_path,
        request.target));
  }
  lane_.call_started(started_);
  // The fan-out's cancellation (deadline, client gone, shutdown, settled) ends every attempt and a pending
  // hedge or retry. Attempts end asynchronously: nothing here reports.
  hook_.emplace(cancel_, [this] {
    cancel_attempts(cancel_.reason());
    if (timer_set()) timer_->cancel();
  });
}

// The legal changes of state; any other is a bug:
//   attempting  -> hedge_due (the first attempt launched, hedging on) | backing_off (the last live attempt
//                  failed, a retry follows) | reported
//   hedge_due   -> attempting (the delay passed, hedged or not, or the wait was cancelled) | backing_off
//                  (the first attempt failed, a retry follows) | reported (it answered or failed for good)
//   backing_off -> attempting (the backoff passed or was cancelled: the retry starts, or the call reports)
//   reported    -> none: the call frees itself (free_if_done())
constexpr bool http_call::legal(state from, state to) {
  switch (from) {
    case state::attempting:
      return to == state::hedge_due || to == state::backing_off || to == state::reported;
    case state::hedge_due:
      return to == state::attempting || to == state::backing_off || to == state::reported;
    case state::backing_off:
      return to == state::attempting;
    case state::reported:
      return false;
  }
  return false;
}

// The one place the state changes (asserting that the change is legal()).
void http_call::enter(state next) {
  assert(legal(state_, next));
  state_ = next;
}

// A new attempt in a free slot (the first, or a retry after a backoff); its start is the caller's last
// act, since the attempt may report before it returns.
void http_call::start_attempt(bool retry) {
  const bool reserved = retry;  // a retry holds a place in the retry budget since its backoff began
  const auto now = retry ? clock::now() : started_;
  if (cancel_.cancelled()) return report_unsent(reserved, launched::cancelled, now);
  const std::size_t slot = live_[0] == nullptr ? 0 : 1;
  ++attempts_;
  if (const auto l = launch(slot, now, last_failed_, false); l != launched::yes)
    return report_unsent(reserved, l, now);
  retry_slot_[slot] = reserved;
  if (!retry && idempotent_ && lane_.settings().hedge.enabled) {
    const auto due = now + lane_.hedge_delay();
    if (due < deadline_) arm_timer(state::hedge_due, due);
  }
  live_[slot]->begin();
}

// The report of an attempt that could not start (`why`), out of start_attempt: its call_result would
// otherwise sit in that frame, on the request's coroutine stack under every call's start.
[[gnu::noinline]] void http_call::report_unsent(bool reserved, launched why, clock::time_point now) {
  if (reserved) lane_.retry_ended();
  if (why == launched::cancelled)
    return report(failure_result(net::error::operation_aborted, "cancelled", true), now);
  if (why == launched::refused) {  // no I/O: like the downstream's own open breaker
    call_result result;
    result.outcome = call_outcome::circuit_open;
    result.detail = "every endpoint's circuit is open";
    return report(std::move(result), now);
  }
  report(failure_result(net::error::host_not_found, "host not resolved", false), now);
}

// The hedge: a second attempt beside the first, which goes on, on another endpoint where there is one.
void http_call::start_hedge() {
  const std::size_t slot = live_[0] == nullptr ? 0 : 1;
  if (launch(slot, clock::now(), endpoint_[1 - slot], true) != launched::yes) return;
  live_[slot]->begin();
}

// Picks the endpoint and creates the attempt in `slot` (begin() is the caller's last act), unless the
// downstream has no address or every endpoint's breaker refused.
http_call::launched http_call::launch(std::size_t slot, clock::time_point now,
                                      const http_endpoints::endpoint* avoid, bool hedge) {
  const auto choice = lane_.pick(now, avoid);
  if (choice.to == nullptr) return choice.refused ? launched::refused : launched::no_address;
  auto* endpoint = choice.to;
  endpoint_[slot] = endpoint;
  ticket_[slot] = choice.ticket;
  const auto head = trace_ == nullptr ? head_ : traced_head(slot, now, *endpoint, hedge);
  live_[slot] = http_attempt::create(*this, first_ ? nullptr : &first_, slot, head, endpoint->pool,
                                     lane_.settings().max_response_bytes, keep_, deadline_, now);
  return launched::yes;
}

// A traced attempt's span starts, and its traceparent goes into the head the attempt in `slot` sends: the
// call's own for slot 0, a copy for slot 1. Neither is in use then: an attempt is done with its head
// once it has reported, and a slot takes a new attempt only after that.
std::string_view http_call::traced_head(std::size_t slot, clock::time_point now,
                                        const http_endpoints::endpoint& to, bool hedge) {
  traceparent_text traceparent;
  auto& rare = *rare_;  // made at the start of a traced call
  rare.attempt_span[slot] = trace_->begin_attempt(now, hedge, to.address, traceparent);
  char* head = rare.head_long.empty() ? head_inline_ : rare.head_long.data();
  if (slot == 1) {
    rare.traced_head.assign(head_);
    head = rare.traced_head.data();
  }
  std::memcpy(head + rare.traceparent_at, traceparent.chars.data(), traceparent.chars.size());
  return {head, head_.size()};
}

void http_call::attempt_done(std::size_t slot, http_attempt::report&& r) {
  live_[slot] = nullptr;
  // Against the endpoint, by the downstream's failure rule (failure_rule.hpp), as the downstream's own
  // breaker judges the call: an attempt cut by the deadline is a timeout; one cancelled otherwise (another
  // attempt won, the client left) counts neither way.
  const auto& res = r.result;
  const bool deadline = state_ != state::reported && cancel_.reason() == cancel_reason::deadline;
  const bool failed =
      res.contacted && (res.outcome == call_outcome::cancelled
                            ? deadline && counts_as_failure(lane_.settings().breaker.failures,
                                                            call_outcome::timeout, call_error::none, 0)
                            : !res.ok() && counts_as_failure(lane_.settings().breaker.failures, res));
  auto* endpoint = std::exchange(endpoint_[slot], nullptr);
  if (failed) last_failed_ = endpoint;
  lane_.attempt_ended(*endpoint, ticket_[slot], failed, res.ok(), r.ended);
  if (std::exchange(retry_slot_[slot], false)) lane_.retry_ended();
  contacted_ = contacted_ || r.result.contacted;
  if (state_ == state::reported) return free_if_done();  // an attempt that lost, now ended
  if (trace_ != nullptr) trace_->end_attempt(rare_->attempt_span[slot], r.ended, &r.result);
  if (r.result.ok()) {
    lane_.record_latency(r.result.latency);
    return report(std::move(r.result), r.ended);  // the other attempt, if any, is cancelled
  }
  const bool other_live = live_[0] != nullptr || live_[1] != nullptr;
  if (!other_live && worth_retry(r)) {
    const auto& retry = lane_.settings().retry;
    // Full jitter over an exponential ceiling: backoff * 2^(retries so far), at most max_backoff.
    auto ceiling = clock::duration(retry.backoff) * (1LL << std::min(attempts_ - 1, 10U));
    ceiling = std::min<clock::duration>(ceiling, retry.max_backoff);
    const auto due = r.ended + lane_.jitter(ceiling);
    if (due < deadline_ && lane_.try_retry()) return arm_timer(state::backing_off, due);
  }
  // The other attempt may still answer; its report decides. An answer the call passes to the client is
  // the downstream's word, as a good one is: it wins at once, and the other attempt is cancelled.
  if (other_live && (keep_.pass == nullptr || !is_passed_answer(*keep_.pass, r.result))) return;
  report(std::move(r.result), r.ended);
}

bool http_call::worth_retry(const http_attempt::report& r) const {
  const auto& retry = lane_.settings().retry;
  if (attempts_ >= retry.attempts || cancel_.cancelled()) return false;
  // A failed connect sent nothing: any call may go again. Otherwise the downstream may have acted on it.
  if (r.kind == http_attempt::report::failure::connect) return true;
  if (!idempotent_) return false;
  if (r.kind == http_attempt::report::failure::reset) return retry.on_reset;
  return r.result.status != 0 &&
         std::find(retry.on_status.begin(), retry.on_status.end(), r.result.status) != retry.on_status.end();
}

void http_call::arm_timer(state next, clock::time_point due) {
  enter(next);
  const auto arming = ++timer_armings_;
  ++timer_waits_;
  if (!timer_) timer_ = std::make_unique<boost::asio::steady_timer>(lane_.executor());
  timer_->expires_at(due);  // a wait still set (the hedge's) runs as aborted, and is told apart by `arming`
  timer_->async_wait([this, arming](const error_code& ec) { timer_fired(ec, arming); });
}

void http_call::timer_fired(const error_code& ec, unsigned arming) {
  --timer_waits_;
  if (arming != timer_armings_ || state_ == state::reported) return free_if_done();  // replaced, or reported
  if (state_ == state::hedge_due) {
    enter(state::attempting);  // the delay is over: the first attempt goes on, with a hedge or without
    const bool one_live = (live_[0] != nullptr) != (live_[1] != nullptr);
    if (ec || cancel_.cancelled() || !one_live || !lane_.try_hedge(clock::now())) return;
    return start_hedge();  // last
  }
  if (state_ == state::backing_off) {
    enter(state::attempting);         // the backoff is over
    if (ec || cancel_.cancelled()) {  // the fan-out cancelled the call during the backoff
      lane_.retry_ended();            // the retry's place in the budget
      return report(failure_result(net::error::operation_aborted, "cancelled", true), clock::now());
    }
    return start_attempt(true);  // last
  }
}

void http_call::cancel_attempts(cancel_reason why) {
  for (auto* attempt : live_) {
    if (attempt != nullptr) attempt->cancel().request_cancel(why);  // ends asynchronously
  }
}

// The call's one report to the fan-out, as the last act of the handler that makes it. The call leaves the
// fan-out's cancel_source first, cancels what is still going (an attempt that lost, a pending hedge), and
// frees itself unless those still have to end. `result` is the caller's (a local or a temporary, never
// this call's own): it is handed on after the call may have freed itself.
void http_call::report(call_result&& result, clock::time_point now) {
  result.latency = now - started_;
  result.contacted = result.contacted || contacted_;
  hook_.reset();
  if (auto* trace = std::exchange(trace_, nullptr)) {  // the fan-out's: not touched after the report
    for (std::size_t slot = 0; slot < live_.size(); ++slot) {
      if (live_[slot] != nullptr) trace->end_attempt(rare_->attempt_span[slot], now, nullptr);
    }
  }
  // The calls that followed this one get a copy (or the first of them a call of its own, when this one was
  // cancelled); their reports are posted or come from calls of their own, never before this one's.
  if (auto* coalescer = lane_.coalescer(); coalescer != nullptr && rare_ && !rare_->coalesce_key.empty())
    coalescer->leader_done(rare_->coalesce_key, result);
  cancel_attempts(cancel_reason::settled);
  if (timer_set()) timer_->cancel();  // a hedge still due (a backoff ends in its handler, never here)
  lane_.call_ended();
  enter(state::reported);
  call_sink& sink = sink_;  // the fan-out: alive until it has this report
  const auto index = index_;
  free_if_done();
  sink.call_finished(index, std::move(result));
}

void http_call::first_attempt_ended() {
  first_.reset();
  free_if_done();
}

// The one place the call frees itself: it has reported, no attempt is live, its member attempt has
// ended, and no timer handler is due.
void http_call::free_if_done() {
  if (state_ == state::reported && live_[0] == nullptr && live_[1] == nullptr && !first_ && timer_waits_ == 0)
    delete this;
}

}  // namespace gateway
