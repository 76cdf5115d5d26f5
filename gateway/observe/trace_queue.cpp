#include "gateway/observe/trace_queue.hpp"

namespace gateway {

trace_queue::trace_queue(std::size_t max_spans) : max_spans_(max_spans) {}

trace_queue::~trace_queue() = default;

bool trace_queue::try_push(trace_record& record) noexcept {
  const std::size_t n = record.span_count();
  std::lock_guard lock(mutex_);
  const std::size_t queued = spans_.load(std::memory_order_relaxed);
  if (n > max_spans_ - queued) return false;
  try {
    records_.push_back(std::move(record));
  } catch (...) {
    return false;
  }
  spans_.store(queued + n, std::memory_order_relaxed);
  return true;
}

std::size_t trace_queue::pop(std::vector<trace_record>& out, std::size_t max_spans) {
  std::size_t taken = 0;
  std::lock_guard lock(mutex_);
  while (!records_.empty()) {
    const std::size_t n = records_.front().span_count();
    if (taken > 0 && (taken >= max_spans || n > max_spans - taken)) break;
    out.push_back(std::move(records_.front()));
    records_.pop_front();
    spans_.store(spans_.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
    taken += n;
  }
  return taken;
}

}  // namespace gateway
