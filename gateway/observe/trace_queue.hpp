#pragma once
// The bounded queue between the threads that finish requests and the tracer's export thread: any number
// of producers, one consumer, at most `max_spans` spans queued. Lock-free (a ring of slots with sequence
// numbers, after D. Vyukov's bounded queue), so a producer never waits for the consumer or another
// producer: a mutex here would let a descheduled export thread stall every I/O thread. A push moves the
// record into a slot made at construction and allocates nothing.

#include "gateway/trace/trace_record.hpp"

#include <atomic>
#include <cstddef>
#include <memory>
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
  struct slot;
  const std::size_t max_spans_;
  const std::size_t mask_;  // slots - 1 (a power of two at least max_spans: a record holds a span or more)
  std::unique_ptr<slot[]> slots_;
  alignas(64) std::atomic<std::size_t> spans_{0};  // reserved by producers, released by the consumer
  alignas(64) std::atomic<std::size_t> head_{0};   // the next position a producer claims
  alignas(64) std::size_t tail_ = 0;               // the consumer's next position
};

}  // namespace gateway
