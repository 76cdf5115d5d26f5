#pragma once
// A value one thread replaces now and then and many threads read on every use: the running
// configuration generation, replaced by a reload and read by each request.
//
// Ordering and ownership rules:
// - publish() replaces the value under the lock and then raises the version (release). A reader that
//   finds the version raised (acquire) takes the value under the same lock. So a read that starts after
//   publish() has returned, or after any reader has taken the new value, gets it or a newer one: two
//   threads never show the values in different orders (a request on one I/O thread cannot see a route
//   that a request on another has already seen removed).
// - A reader belongs to one thread and keeps a share of the value it last took until its next read on
//   that thread; the old value is released there, outside the lock.
// - While nothing changes, a read is one atomic load of a word written only by publish(): no lock and no
//   reference count touched.

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <utility>

namespace gateway {

template <class T>
class published {
 public:
  explicit published(std::shared_ptr<const T> first = nullptr) : value_(std::move(first)) {}
  published(const published&) = delete;
  published& operator=(const published&) = delete;

  // Replaces the value; returns the previous one (released by the caller, outside the lock).
  std::shared_ptr<const T> publish(std::shared_ptr<const T> next) {
    const std::lock_guard hold(lock_);
    auto previous = std::exchange(value_, std::move(next));
    version_.store(version_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    return previous;
  }

  std::shared_ptr<const T> load() const {
    const std::lock_guard hold(lock_);
    return value_;
  }

  // One thread's view: get() returns the current value, taking it anew only when it has changed.
  class reader {
   public:
    explicit reader(const published& from) : from_(&from) {}

    const std::shared_ptr<const T>& get() {
      if (from_->version_.load(std::memory_order_acquire) != seen_) take();
      return held_;
    }
    // Lets go of the held value (the next get() takes the current one again).
    void release() {
      held_.reset();
      seen_ = unseen;
    }

   private:
    static constexpr std::uint64_t unseen = std::numeric_limits<std::uint64_t>::max();

    void take() {
      std::shared_ptr<const T> next;
      {
        const std::lock_guard hold(from_->lock_);
        next = from_->value_;
        seen_ = from_->version_.load(std::memory_order_relaxed);
      }
      held_.swap(next);  // the old value goes here, outside the lock
    }

    const published* from_;
    std::shared_ptr<const T> held_;
    std::uint64_t seen_ = unseen;
  };

 private:
  mutable std::mutex lock_;
  std::shared_ptr<const T> value_;         // guarded by lock_
  std::atomic<std::uint64_t> version_{0};  // written under lock_
};

}  // namespace gateway
