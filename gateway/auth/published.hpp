#pragma once
// A value one thread replaces now and then (a key set read again) and every I/O thread reads per request.
// Each reader thread keeps its own reference and takes the new one only when the version moved: a
// request costs one relaxed atomic load, not a lock or a shared count's cache-line bounce.
//
// publish() from any thread; get(thread) from the I/O thread `thread` only (its slot is its own). What
// get() returns stays valid until that thread's next get().

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace gateway {

template <class T>
class published {
 public:
  explicit published(std::size_t threads) : slots_(threads) {}

  void publish(std::shared_ptr<const T> value) {
    const std::lock_guard hold(lock_);
    value_ = std::move(value);
    version_.fetch_add(1, std::memory_order_release);
  }

  const T* get(std::size_t thread) const {
    auto& own = slots_[thread];
    const auto version = version_.load(std::memory_order_acquire);
    if (version != own.version) {
      const std::lock_guard hold(lock_);
      own.value = value_;
      own.version = version;
    }
    return own.value.get();
  }

  std::shared_ptr<const T> current() const {
    const std::lock_guard hold(lock_);
    return value_;
  }

 private:
  struct alignas(64) slot {
    std::uint64_t version = 0;
    std::shared_ptr<const T> value;
  };
  mutable std::mutex lock_;
  std::shared_ptr<const T> value_;
  std::atomic<std::uint64_t> version_{1};  // slots start at 0: the first get() takes the value
  mutable std::vector<slot> slots_;
};

}  // namespace gateway
