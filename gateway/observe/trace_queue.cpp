#include "gateway/observe/trace_queue.hpp"

#include <bit>
#include <cstdint>

namespace gateway {

// A slot is free for the producer claiming position p when seq == p, and full for the consumer at
// position p when seq == p + 1; the consumer frees it for position p + slots.
struct trace_queue::slot {
  std::atomic<std::size_t> seq{0};
  trace_record record;
};

trace_queue::trace_queue(std::size_t max_spans)
    : max_spans_(max_spans),
      mask_(std::bit_ceil(max_spans < 1 ? std::size_t{1} : max_spans) - 1),
      slots_(new slot[mask_ + 1]) {
  for (std::size_t i = 0; i <= mask_; ++i) slots_[i].seq.store(i, std::memory_order_relaxed);
}

trace_queue::~trace_queue() = default;

bool trace_queue::try_push(trace_record& record) noexcept {
  const std::size_t n = record.span_count();
  // Reserve the spans first: the slots then cannot run out, since a slot is freed before its spans are
  // released and every record holds at least one span.
  // Acquire pairs with the consumer's release: a slot freed before the spans seen here were released is
  // seen free below.
  std::size_t queued = spans_.load(std::memory_order_acquire);
  do {
    if (n > max_spans_ - queued) return false;
  } while (!spans_.compare_exchange_weak(queued, queued + n, std::memory_order_acquire));

  std::size_t pos = head_.load(std::memory_order_relaxed);
  slot* s = nullptr;
  for (;;) {
    s = &slots_[pos & mask_];
    const std::size_t seq = s->seq.load(std::memory_order_acquire);
    const auto diff = static_cast<std::intptr_t>(seq) - static_cast<std::intptr_t>(pos);
    if (diff == 0) {
      if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
    } else if (diff < 0) {
      // Not reachable given the reservation above; kept so that a broken invariant drops, not corrupts.
      spans_.fetch_sub(n, std::memory_order_relaxed);
      return false;
    } else {
      pos = head_.load(std::memory_order_relaxed);
    }
  }
  s->record = std::move(record);
  s->seq.store(pos + 1, std::memory_order_release);
  return true;
}

std::size_t trace_queue::pop(std::vector<trace_record>& out, std::size_t max_spans) {
  std::size_t taken = 0;
  for (;;) {
    slot& s = slots_[tail_ & mask_];
    // Empty, or the producer that claimed this position is still moving its record in: the rest waits
    // for the next pop, which keeps the records in order.
    if (s.seq.load(std::memory_order_acquire) != tail_ + 1) break;
    const std::size_t n = s.record.span_count();
    if (taken > 0 && (taken >= max_spans || n > max_spans - taken)) break;
    out.push_back(std::move(s.record));
    s.seq.store(tail_ + mask_ + 1, std::memory_order_release);
    ++tail_;
    spans_.fetch_sub(n, std::memory_order_release);
    taken += n;
  }
  return taken;
}

}  // namespace gateway
