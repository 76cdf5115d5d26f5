#pragma once
// A stackful coroutine's wait for an event raised on its own I/O thread.
//
// notify() wakes it through the I/O thread's queue (a post): the coroutine runs later, never inside the
// call, so notify() is safe anywhere, also in code that goes on touching its own state afterwards (a
// cancel hook, a loop over several calls, a completion handler): the woken coroutine cannot end, and free
// that state, under it. (A direct resumption inside the completion that raised the event saved 1.9% of
// the gateway's CPU per request against a timer used as the event, under the 3% a mechanism of our own
// must save: loadtest/README.md, "Custom machinery, measured". It was removed, and with it the rule of
// when it was allowed.)
//
// One waiter at a time; notify() must be called on the waiter's I/O thread. A wait may return without its
// event (a wake still queued when the event came another way), so callers re-check their condition in a
// loop. While a coroutine waits, the io_context counts it as outstanding work, so run() does not return
// under it.

#include <boost/asio/error.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/spawn.hpp>

#include <optional>
#include <utility>

namespace gateway {

class wake_event {
 public:
  wake_event() = default;
  wake_event(const wake_event&) = delete;
  wake_event& operator=(const wake_event&) = delete;

  // Suspends the coroutine until woken; returns at once when a wake came since the last wait.
  void wait(boost::asio::yield_context yield) {
    if (std::exchange(notified_, false)) return;
    boost::asio::async_initiate<boost::asio::yield_context, void()>(
        [this](handler h) {
          work_.emplace(
              boost::asio::prefer(h.get_executor(), boost::asio::execution::outstanding_work.tracked));
          handler_.emplace(std::move(h));
        },
        yield);
  }
  bool waiting() const { return handler_.has_value(); }

  // Queues the waiting coroutine's resumption; with no coroutine waiting, the next wait() returns at once.
  void notify() {
    if (!handler_) {
      notified_ = true;
      return;
    }
    auto work = take_work();
    boost::asio::post(work, take_handler());
  }

 private:
  using handler = boost::asio::async_result<boost::asio::yield_context, void()>::handler_type;
  using tracked_executor = decltype(boost::asio::prefer(std::declval<boost::asio::any_io_executor>(),
                                                        boost::asio::execution::outstanding_work.tracked));
  handler take_handler() {
    handler h = std::move(*handler_);
    handler_.reset();
    return h;
  }
  tracked_executor take_work() {
    auto w = std::move(*work_);
    work_.reset();
    return w;
  }

  std::optional<handler> handler_;
  std::optional<tracked_executor> work_;
  bool notified_ = false;
};

}  // namespace gateway
