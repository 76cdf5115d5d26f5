#pragma once
// The bounded queue between the threads that finish requests and the tracer's export thread: any number
// of producers, one consumer, at most `max_spans` spans queued. A std::deque under a mutex: a push takes
// the mutex once and moves the record in; a pop holds it while it moves at most one batch out. (A
// lock-free ring made at start saved 0.9% of CPU per request with every request traced, under the 3% a
// mechanism of our own must save: loadtest/README.md, "Custom machinery, measured".) A push that cannot
// allocate drops the record, as a full queue does.

#include "gateway/trace/trace_record.hpp"

#include <atomic>
#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

namespace gateway {

class trace_queue {
 public:
  explicit trace_queue(std::size_t max_spans);
  trace_queue(const trace_queue&) = delete;
  trace_queue& operator=(const trace_queue&) = delete;
  ~trace_queue();

  // Any thread. Moves `record` in and returns true, or returns false and leaves it as it was when its
  // spans do not fit.
  bool try_push(trace_record& record) noexcept;

  // The consumer thread only. Moves queued records, oldest first, into `out` while their spans total at
  // most `max_spans` (at least one record when any is queued); returns the spans moved.
  std::size_t pop(std::vector<trace_record>& out, std::size_t max_spans);

  std::size_t spans() const { return spans_.load(std::memory_order_relaxed); }
  std::size_t max_spans() const { return max_spans_; }

 private:
  const std::size_t max_spans_;
  std::mutex mutex_;
  std::deque<trace_record> records_;   // guarded by mutex_
  std::atomic<std::size_t> spans_{0};  // changed under mutex_; read without it (spans(), a gauge)
};

}  // namespace gateway
