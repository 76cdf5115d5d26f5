#pragma once
// The deadlines of many waits on one I/O thread, kept by one timer. Adding, moving or removing a deadline
// is a heap operation without any timer operation: the timer is set again only when a deadline comes
// before the time it is set for, or when it fires (then it runs whatever is due and sleeps until the next
// deadline). Arming, cancelling and re-arming an Asio timer per wait each cost a trip through the
// reactor's timer queue, and a cancelled wait a trip through the scheduler's.
//
// Single-threaded: every call, and every on_deadline(), on the timer's executor. An entry is removed
// before its on_deadline() runs; it must be removed (or never added) before it is destroyed.

#include "gateway/core/duration.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstddef>
#include <limits>
#include <memory>
#include <vector>

namespace gateway {

class deadline_queue {
 public:
  class entry {
   public:
    virtual void on_deadline() = 0;
    bool queued() const { return index_ != npos; }

   protected:
    entry() = default;
    entry(const entry&) = delete;
    entry& operator=(const entry&) = delete;
    ~entry() = default;

   private:
    friend class deadline_queue;
    static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();
    clock::time_point due_{};
    std::size_t index_ = npos;
  };

  explicit deadline_queue(const boost::asio::any_io_executor& ex);
  deadline_queue(const deadline_queue&) = delete;
  deadline_queue& operator=(const deadline_queue&) = delete;
  ~deadline_queue();

  // Queues `e` for `due`, or moves it there when it is queued already.
  void set(entry& e, clock::time_point due);
  void remove(entry& e);
  std::size_t size() const { return heap_.size(); }
  // For the end of the thread's work: from now on the timer is cancelled whenever the queue is empty, so
  // that it does not keep the io_context running (a set timer is outstanding work).
  void close();

 private:
  void arm();
  void fire();
  void place(std::size_t i, entry* e);
  void sift_up(std::size_t i);
  void sift_down(std::size_t i);

  std::vector<entry*> heap_;  // a binary min-heap on due_; each entry knows its index
  boost::asio::steady_timer timer_;
  bool armed_ = false;
  bool closing_ = false;
  clock::time_point armed_for_{};
  std::shared_ptr<bool> alive_;  // false once destroyed: the timer's handler may still be queued
};

}  // namespace gateway
