#pragma once
// A stackful coroutine's wait for an event raised on its own I/O thread, resumed by whoever raises it,
// inside that call. Waking a coroutine through a timer or a post costs a trip through the scheduler's
// queue, and behind the queue's reactor task that trip costs an extra `epoll_wait` (with a zero timeout)
// per wake-up; Asio's own operations complete their handlers the same direct way when they finish on
// their executor's thread.
//
// One waiter at a time. notify() must be called on the waiter's I/O thread and not from the waiting
// coroutine itself; it is best called last, since the resumed coroutine may end and destroy whatever
// called notify(). While a coroutine waits, the io_context counts it as outstanding work, so run() does
// not return under it.

#include <boost/asio/error.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
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

  // Suspends the coroutine until notify(); returns at once when notify() came since the last wait.
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

  // Resumes the waiting coroutine now: it runs until it waits again or ends, then this returns. With no
  // coroutine waiting, the next wait() returns at once.
  void notify() {
    if (!handler_) {
      notified_ = true;
      return;
    }
    handler h = std::move(*handler_);
    handler_.reset();
    auto work = std::move(*work_);  // released after the coroutine has run
    work_.reset();
    std::move(h)();
  }

 private:
  using handler = boost::asio::async_result<boost::asio::yield_context, void()>::handler_type;
  using tracked_executor = decltype(boost::asio::prefer(std::declval<boost::asio::any_io_executor>(),
                                                        boost::asio::execution::outstanding_work.tracked));
  std::optional<handler> handler_;
  std::optional<tracked_executor> work_;
  bool notified_ = false;
};

}  // namespace gateway
