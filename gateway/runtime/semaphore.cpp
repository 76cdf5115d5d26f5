#include "gateway/runtime/semaphore.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

namespace gateway {

namespace net = boost::asio;

struct async_semaphore::waiter {
  explicit waiter(const net::any_io_executor& ex) : wake(ex) {}
  net::steady_timer wake;
  bool granted = false;  // guarded by the semaphore's mutex
  std::list<std::shared_ptr<waiter>>::iterator position;
};

async_semaphore::async_semaphore(std::size_t permits, std::size_t max_waiting)
    : capacity_(permits), max_waiting_(max_waiting), available_(permits) {}

async_semaphore::permit async_semaphore::try_acquire() {
  std::lock_guard lock(mutex_);
  if (available_ == 0 || !queue_.empty()) return {};
  --available_;
  return permit(this);
}

async_semaphore::result async_semaphore::acquire(clock::time_point deadline, cancel_source* cancel,
                                                 net::yield_context yield) {
  if (cancel && cancel->cancelled()) return {status::cancelled, {}};
  std::shared_ptr<waiter> me;
  {
    std::lock_guard lock(mutex_);
    if (available_ > 0 && queue_.empty()) {
      --available_;
      return {status::acquired, permit(this)};
    }
    if (queue_.size() >= max_waiting_) return {status::queue_full, {}};
    me = std::make_shared<waiter>(yield.get_executor());
    me->wake.expires_at(deadline);
    me->position = queue_.insert(queue_.end(), me);
  }
  const auto started = clock::now();
  {
    // The hook runs on this coroutine's executor, like the timer, so it may touch the timer directly.
    std::optional<cancel_source::scoped_hook> hook;
    if (cancel) hook.emplace(*cancel, [&me] { me->wake.cancel(); });
    boost::system::error_code ec;
    me->wake.async_wait(yield[ec]);
  }
  wait_time_.observe(clock::now() - started);

  bool granted = false;
  {
    std::lock_guard lock(mutex_);
    granted = me->granted;
    if (!granted) queue_.erase(me->position);
  }
  const bool cancelled = cancel && cancel->cancelled();
  if (granted && !cancelled) return {status::acquired, permit(this)};
  if (granted) release();  // granted just as the caller gave up: pass it on
  if (cancelled) return {status::cancelled, {}};
  return {status::timeout, {}};
}

void async_semaphore::release() {
  std::shared_ptr<waiter> next;
  {
    std::lock_guard lock(mutex_);
    if (queue_.empty()) {
      ++available_;
      return;
    }
    next = std::move(queue_.front());
    queue_.pop_front();
    next->granted = true;
  }
  // Wake the waiter on its own executor: its timer must not be touched from this thread.
  net::post(next->wake.get_executor(), [next] { next->wake.cancel(); });
}

std::size_t async_semaphore::available() const {
  std::lock_guard lock(mutex_);
  return available_;
}

std::size_t async_semaphore::waiting() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

}  // namespace gateway
