#include "gateway/downstream/call_coalescer.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <utility>

namespace gateway {

call_coalescer::call_coalescer(boost::asio::any_io_executor ex, starter start_call)
    : ex_(std::move(ex)), start_call_(std::move(start_call)) {}

void call_coalescer::start(const call_request& request, call_sink& sink, std::size_t index) {
  auto key = answer_key(request);
  const auto found = in_flight_.find(key);
  if (found == in_flight_.end()) {
    in_flight_.emplace(std::move(key), followers{});
    return start_call_(request, sink, index);  // leads (last: it may report at once)
  }
  if (request.cancel == nullptr || request.cancel->cancelled()) {  // nothing to wait for
    call_result cancelled;
    cancelled.outcome = call_outcome::cancelled;
    cancelled.detail = "cancelled";
    cancelled.contacted = false;
    return sink.call_finished(index, std::move(cancelled));
  }
  auto f = std::make_unique<follower>();
  f->target = std::move(key);
  f->request = request;
  f->request.target = std::string_view(f->target).substr(0, request.target.size());
  f->sink = &sink;
  f->index = index;
  f->hook.emplace(*request.cancel, [this, raw = f.get()] { drop(raw->target, raw); });
  found->second.push_back(std::move(f));
  coalesced_.store(coalesced_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// A follower's own cancellation: it leaves the group and reports at once (inside its cancel hook).
void call_coalescer::drop(const std::string& target, follower* f) {
  const auto group = in_flight_.find(target);
  if (group == in_flight_.end()) return;
  auto& list = group->second;
  const auto at = std::find_if(list.begin(), list.end(), [&](const auto& p) { return p.get() == f; });
  if (at == list.end()) return;
  auto* sink = f->sink;
  const auto index = f->index;
  list.erase(at);  // frees the follower and its hook (already spent)
  call_result cancelled;
  cancelled.outcome = call_outcome::cancelled;
  cancelled.detail = "cancelled";
  cancelled.contacted = false;
  sink->call_finished(index, std::move(cancelled));
}

void call_coalescer::leader_done(std::string_view key, const call_result& result) {
  const auto group = in_flight_.find(std::string(key));
  if (group == in_flight_.end()) return;
  followers waiting = std::move(group->second);
  in_flight_.erase(group);
  if (result.outcome == call_outcome::cancelled) {
    // No result for the others: the first of them leads with a call of its own, which the rest (and
    // calls for the target from now on) follow. Started from a handler of its own: started here, it
    // could report, and resume its request's coroutine, inside the leader's report.
    if (waiting.empty()) return;
    auto next = std::move(waiting.front());
    waiting.erase(waiting.begin());
    in_flight_.emplace(next->target, std::move(waiting));
    // Its cancellation from now on is its call's to see (the call checks it before anything else).
    next->hook.reset();
    boost::asio::post(ex_, [this, next = std::move(next)] {
      start_call_(next->request, *next->sink, next->index);  // copies what it needs from `next`; last act
    });
    return;
  }
  for (auto& f : waiting) {
    f->hook.reset();  // from now on only the delivery reports it
    boost::asio::post(ex_, [f = std::move(f), copy = result]() mutable {
      f->sink->call_finished(f->index, std::move(copy));  // last act
    });
  }
}

}  // namespace gateway
