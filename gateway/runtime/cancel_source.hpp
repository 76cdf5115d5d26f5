#pragma once
// One-shot cancellation of one child operation, used on a single executor (no locking).
// The child registers a hook for whatever it is waiting on (a socket, a timer, a query); the parent's
// request_cancel() records the reason and runs the current hook once. A child checks cancelled()
// before each new wait, so a cancellation between two waits is never lost.

#include <functional>
#include <utility>

namespace gateway {

// settled: the answer no longer needs the call (a required call failed, or starting the request's calls
// failed).
enum class cancel_reason { none, deadline, client_gone, shutdown, settled };

class cancel_source {
 public:
  void request_cancel(cancel_reason why) {
    if (reason_ != cancel_reason::none) return;
    reason_ = why;
    if (auto hook = std::exchange(hook_, nullptr)) hook();
  }
  bool cancelled() const { return reason_ != cancel_reason::none; }
  cancel_reason reason() const { return reason_; }

  // Registers `hook` with `src` while it lives (one hook at a time: a new guard replaces the last one's).
  class scoped_hook {
   public:
    scoped_hook(cancel_source& src, std::function<void()> hook) : src_(src) { src_.hook_ = std::move(hook); }
    scoped_hook(const scoped_hook&) = delete;
    scoped_hook& operator=(const scoped_hook&) = delete;
    ~scoped_hook() { src_.hook_ = nullptr; }

   private:
    cancel_source& src_;
  };

 private:
  cancel_reason reason_ = cancel_reason::none;
  std::function<void()> hook_;
};

}  // namespace gateway
