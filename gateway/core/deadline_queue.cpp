#include "gateway/core/deadline_queue.hpp"

#include <utility>

namespace gateway {

deadline_queue::deadline_queue(const boost::asio::any_io_executor& ex)
    : timer_(ex), alive_(std::make_shared<bool>(true)) {}

deadline_queue::~deadline_queue() {
  *alive_ = false;
  for (auto* e : heap_) e->index_ = entry::npos;
}

void deadline_queue::set(entry& e, clock::time_point due) {
  if (e.queued()) {
    const bool earlier = due < e.due_;
    e.due_ = due;
    if (earlier) {
      sift_up(e.index_);
    } else {
      sift_down(e.index_);
    }
  } else {
    e.due_ = due;
    e.index_ = heap_.size();
    heap_.push_back(&e);
    sift_up(e.index_);
  }
  if (!armed_ || due < armed_for_) arm();
}

void deadline_queue::remove(entry& e) {
  if (!e.queued()) return;
  const std::size_t i = e.index_;
  e.index_ = entry::npos;
  entry* last = heap_.back();
  heap_.pop_back();
  if (heap_.empty() && closing_ && armed_) {
    armed_ = false;
    timer_.cancel();
  }
  if (last == &e) return;
  place(i, last);
  sift_up(i);
  sift_down(last->index_);
  // The timer stays set: if it fires before the next deadline, it sleeps again.
}

void deadline_queue::close() {
  closing_ = true;
  if (heap_.empty() && armed_) {
    armed_ = false;
    timer_.cancel();
  }
}

void deadline_queue::arm() {
  if (heap_.empty()) return;
  armed_ = true;
  armed_for_ = heap_.front()->due_;
  timer_.expires_at(armed_for_);  // replaces a later wait (its handler runs as aborted)
  timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (ec || !*alive) return;
    armed_ = false;
    fire();
  });
}

void deadline_queue::fire() {
  // Each entry is removed before it runs: what it does (add itself again, remove others) leaves the heap
  // consistent for the next look at its front.
  for (;;) {
    if (heap_.empty()) return;
    entry* first = heap_.front();
    if (first->due_ > clock::now()) break;
    remove(*first);
    first->on_deadline();
  }
  if (!armed_) arm();
}

void deadline_queue::place(std::size_t i, entry* e) {
  heap_[i] = e;
  e->index_ = i;
}

void deadline_queue::sift_up(std::size_t i) {
  entry* e = heap_[i];
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (!(e->due_ < heap_[parent]->due_)) break;
    place(i, heap_[parent]);
    i = parent;
  }
  place(i, e);
}

void deadline_queue::sift_down(std::size_t i) {
  entry* e = heap_[i];
  const std::size_t n = heap_.size();
  for (;;) {
    std::size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && heap_[child + 1]->due_ < heap_[child]->due_) ++child;
    if (!(heap_[child]->due_ < e->due_)) break;
    place(i, heap_[child]);
    i = child;
  }
  place(i, e);
}

}  // namespace gateway
