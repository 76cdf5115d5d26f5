#pragma once
// An asynchronous, FIFO-fair counting semaphore for stackful coroutines on any of the I/O threads.
// A released permit goes straight to the longest waiter (no barging), so a burst cannot starve anyone.
// Waiting respects the caller's deadline and cancel_source; a waiter that gives up leaves the queue,
// and a permit granted at the moment it gives up is passed on, never leaked. More than `max_waiting`
// waiters: acquire() refuses at once. Each waiter's executor must be single-threaded (one io_context
// thread), as the gateway's I/O threads are.

#include "gateway/runtime/cancel_source.hpp"
#include "gateway/runtime/duration.hpp"
#include "gateway/runtime/histogram.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/spawn.hpp>

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

namespace gateway {

class async_semaphore {
 public:
  async_semaphore(std::size_t permits, std::size_t max_waiting);
  async_semaphore(const async_semaphore&) = delete;
  async_semaphore& operator=(const async_semaphore&) = delete;

  // Holds one permit; releases it when destroyed (or on release()).
  class permit {
   public:
    permit() = default;
    explicit permit(async_semaphore* owner) : owner_(owner) {}
    permit(permit&& other) noexcept : owner_(std::exchange(other.owner_, nullptr)) {}
    permit& operator=(permit&& other) noexcept {
      if (this != &other) {
        release();
        owner_ = std::exchange(other.owner_, nullptr);
      }
      return *this;
    }
    permit(const permit&) = delete;
    permit& operator=(const permit&) = delete;
    ~permit() { release(); }

    explicit operator bool() const { return owner_ != nullptr; }
    void release() {
      if (auto* o = std::exchange(owner_, nullptr)) o->release();
    }

   private:
    async_semaphore* owner_ = nullptr;
  };

  enum class status { acquired, timeout, cancelled, queue_full };

  struct result {
    status outcome;
    permit held;  // set when outcome == acquired
  };

  // Waits for a permit until `deadline` or until `cancel` fires (null: no cancellation).
  result acquire(clock::time_point deadline, cancel_source* cancel, boost::asio::yield_context yield);
  // Takes a permit only if one is free and nobody waits.
  permit try_acquire();

  std::size_t available() const;
  std::size_t waiting() const;
  std::size_t capacity() const { return capacity_; }
  // Time spent waiting by acquire() calls that did wait, whatever their outcome.
  const histogram& wait_time() const { return wait_time_; }

 private:
  struct waiter;
  void release();

  const std::size_t capacity_;
  const std::size_t max_waiting_;
  mutable std::mutex mutex_;
  std::size_t available_;
  std::list<std::shared_ptr<waiter>> queue_;
  histogram wait_time_;
};

}  // namespace gateway
