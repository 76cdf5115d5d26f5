#pragma once
// A stackful coroutine's wait for an event raised on its own I/O thread.
//
// Two ways to wake it, and the rule that decides between them:
// - notify() defers: the coroutine is resumed later, from the I/O thread's queue (a post). It is safe
//   anywhere, in particular in code that goes on touching its own state after the call (a cancel hook,
//   a loop over several calls, anything reached from another coroutine's cancel): the woken coroutine
//   cannot end, and free that state, under it.
// - resume_now() resumes the coroutine inside the call: it runs until it waits again or ends, then this
//   returns. Waking through the queue costs a trip through the scheduler (and, behind its reactor task,
//   an extra `epoll_wait`), so the request path uses it, but only as the last thing a completion handler
//   does (an Asio completion, a timer's handler), with nothing of the caller's touched afterwards except
//   what provably outlives the coroutine (a shared_ptr the handler holds). Every call site says why it
//   qualifies.
//
// One waiter at a time; both must be called on the waiter's I/O thread, never from the waiting coroutine
// itself. A wait may return without its event (a deferred wake still queued when the event came another
// way), so callers re-check their condition in a loop. While a coroutine waits, the io_context counts it
// as outstanding work, so run() does not return under it.

#include <boost/asio/error.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/spawn.hpp>

#include <optional>
#include <utility>

namespace gateway {

class direct_wake {
 public:
  direct_wake() = default;
  direct_wake(const direct_wake&) = delete;
  direct_wake& operator=(const direct_wake&) = delete;

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

  // Resumes the waiting coroutine now (see the rule above); with none waiting, the next wait() returns at
  // once.
  void resume_now() {
    if (!handler_) {
      notified_ = true;
      return;
    }
    handler h = take_handler();
    auto work = take_work();  // released after the coroutine has run
    std::move(h)();
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
