// direct_wake and deadline_queue on a real io_context: who resumes a waiting coroutine and when, that a
// deadline comes due in order whatever is added or removed around it, and that neither keeps the
// io_context running once there is nothing left to wait for.

#include "gateway/core/deadline_queue.hpp"
#include "gateway/core/direct_wake.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace gateway;
namespace net = boost::asio;
using namespace std::chrono_literals;

namespace {

void rethrow(std::exception_ptr e) {
  if (e) std::rethrow_exception(e);
}

struct recorded_entry final : deadline_queue::entry {
  std::vector<int>* log = nullptr;
  int id = 0;
  void on_deadline() override { log->push_back(id); }
};

}  // namespace

namespace {

// The order of events when a posted handler wakes a waiting coroutine with `wake` (resume_now or notify).
std::string wake_trace(void (direct_wake::*wake)()) {
  net::io_context ioc{1};
  direct_wake w;
  std::string trace;
  net::spawn(
      ioc,
      [&](net::yield_context yield) {
        trace += "wait ";
        w.wait(yield);
        trace += "resumed ";
      },
      rethrow);
  net::post(ioc, [&] {
    REQUIRE(w.waiting());
    trace += "wake ";
    (w.*wake)();
    CHECK_FALSE(w.waiting());
    trace += "returned ";
  });
  ioc.run();
  return trace;
}

}  // namespace

TEST_CASE("direct_wake: resume_now resumes the waiting coroutine inside the call") {
  CHECK(wake_trace(&direct_wake::resume_now) == "wait wake resumed returned ");
}

// notify() is for callers that go on touching their own state: the woken coroutine must not run (and
// possibly end, freeing that state) before the caller has returned.
TEST_CASE("direct_wake: notify resumes the waiting coroutine only after the caller has returned") {
  CHECK(wake_trace(&direct_wake::notify) == "wait wake returned resumed ");
}

TEST_CASE("direct_wake: a notify before the wait makes the wait return at once") {
  net::io_context ioc{1};
  direct_wake wake;
  int resumed = 0;
  net::spawn(
      ioc,
      [&](net::yield_context yield) {
        wake.notify();  // nobody waiting: remembered
        wake.wait(yield);
        ++resumed;
      },
      rethrow);
  ioc.run();
  CHECK(resumed == 1);
}

TEST_CASE("direct_wake: a waiting coroutine keeps run() going until it is notified") {
  net::io_context ioc{1};
  direct_wake wake;
  bool resumed = false;
  net::spawn(
      ioc,
      [&](net::yield_context yield) {
        wake.wait(yield);
        resumed = true;
      },
      rethrow);
  // Nothing else is queued: without the waiter's outstanding work, run_for would return at once.
  std::thread notifier([&] {
    std::this_thread::sleep_for(50ms);
    net::post(ioc, [&] { wake.notify(); });
  });
  const auto start = std::chrono::steady_clock::now();
  ioc.run_for(5s);
  notifier.join();
  CHECK(resumed);
  CHECK(std::chrono::steady_clock::now() - start >= 40ms);
}

TEST_CASE("deadline_queue: entries come due in deadline order; removed ones never") {
  net::io_context ioc{1};
  deadline_queue queue(ioc.get_executor());
  std::vector<int> log;
  std::vector<recorded_entry> entries(40);
  std::mt19937 rng(7);
  const auto start = clock::now();
  std::vector<int> expected;
  for (int i = 0; i < 40; ++i) {
    entries[static_cast<std::size_t>(i)].log = &log;
    entries[static_cast<std::size_t>(i)].id = i;
  }
  // Shuffled deadlines 10..49 ms (entry i due at 10 + i ms), some moved, some removed.
  std::vector<int> order(40);
  for (int i = 0; i < 40; ++i) order[static_cast<std::size_t>(i)] = i;
  std::shuffle(order.begin(), order.end(), rng);
  for (const int i : order) queue.set(entries[static_cast<std::size_t>(i)], start + 200ms);
  for (const int i : order)
    queue.set(entries[static_cast<std::size_t>(i)], start + std::chrono::milliseconds(10 + i));
  for (int i = 0; i < 40; i += 3) queue.remove(entries[static_cast<std::size_t>(i)]);
  for (int i = 0; i < 40; ++i) {
    if (i % 3 != 0) expected.push_back(i);
  }
  CHECK(queue.size() == expected.size());
  ioc.run_for(2s);
  CHECK(log == expected);
  CHECK(queue.size() == 0);
}

TEST_CASE("deadline_queue: an entry set again from its own on_deadline comes due again") {
  net::io_context ioc{1};
  deadline_queue queue(ioc.get_executor());
  struct repeating final : deadline_queue::entry {
    deadline_queue* q = nullptr;
    int fired = 0;
    void on_deadline() override {
      if (++fired < 3) q->set(*this, clock::now() + 5ms);
    }
  } e;
  e.q = &queue;
  queue.set(e, clock::now() + 5ms);
  ioc.run_for(2s);
  CHECK(e.fired == 3);
  CHECK_FALSE(e.queued());
}

TEST_CASE("deadline_queue: after close() an empty queue lets run() return") {
  net::io_context ioc{1};
  deadline_queue queue(ioc.get_executor());
  std::vector<int> log;
  recorded_entry e;
  e.log = &log;
  queue.set(e, clock::now() + 1h);
  queue.remove(e);  // the timer stays set for an hour, as the queue waits lazily
  net::post(ioc, [&] { queue.close(); });
  const auto start = std::chrono::steady_clock::now();
  ioc.run_for(5s);
  CHECK(std::chrono::steady_clock::now() - start < 1s);
  CHECK(log.empty());
}
