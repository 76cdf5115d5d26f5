#include "gateway/downstream/call_coalescer.hpp"

#include "gateway/downstream/share_key.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <utility>

namespace gateway {

namespace {

// Whether followers may have a copy of `result`: not when it is its own client's (see the header).
bool for_followers(const call_result& result) {
  return result.shareable && !result.sets_cookie;
}

}  // namespace

call_coalescer::call_coalescer(boost::asio::any_io_executor ex, starter start_call)
    : ex_(std::move(ex)), start_call_(std::move(start_call)) {}

void call_coalescer::start(const call_request& request, call_sink& sink, std::size_t index) {
  auto key = share_key(request);
  const auto found = in_flight_.find(key);
  if (found == in_flight_.end()) {
    in_flight_.emplace(key, followers{});
    return start_call_(request, sink, index, std::move(key));  // leads (last: it may report at once)
  }
  if (request.cancel == nullptr || request.cancel->cancelled()) {  // nothing to wait for
    call_result cancelled;
    cancelled.outcome = call_outcome::cancelled;
    cancelled.detail = "cancelled";
    cancelled.contacted = false;
    return sink.call_finished(index, std::move(cancelled));
  }
  auto f = std::make_unique<follower>();
  f->key = std::move(key);
  f->target = request.target;
  f->body = request.body;
  f->request = request;
  f->request.target = f->target;
  f->request.body = f->body;
  f->sink = &sink;
  f->index = index;
  f->hook.emplace(*request.cancel, [this, raw = f.get()] { drop(raw->key, raw); });
  found->second.push_back(std::move(f));
  coalesced_.store(coalesced_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// A follower's own cancellation: it leaves the group and reports at once (inside its cancel hook).
void call_coalescer::drop(const std::string& key, follower* f) {
  const auto group = in_flight_.find(key);
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
    // calls for the key from now on) follow. Started from a handler of its own: started here, it could
    // report, and resume its request's coroutine, inside the leader's report.
    if (waiting.empty()) return;
    auto next = std::move(waiting.front());
    waiting.erase(waiting.begin());
    in_flight_.emplace(next->key, std::move(waiting));
    // Its cancellation from now on is its call's to see (the call checks it before anything else).
    next->hook.reset();
    boost::asio::post(ex_, [this, next = std::move(next)] {
      // Copies what it needs from `next`; last act.
      start_call_(next->request, *next->sink, next->index, std::move(next->key));
    });
    return;
  }
  if (!for_followers(result)) {
    // Each makes a call of its own, all at once, leading nobody (calls for the key from now on lead
    // afresh); started from handlers of their own, as above.
    for (auto& f : waiting) {
      f->hook.reset();
      boost::asio::post(ex_, [this, f = std::move(f)] {
        start_call_(f->request, *f->sink, f->index, std::string());  // copies what it needs; last act
      });
    }
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
