// The semaphore with real io_contexts on two threads, as the gateway's I/O threads use it.

#include "gateway/runtime/semaphore.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <thread>

using namespace gateway;
namespace net = boost::asio;
using namespace std::chrono_literals;

namespace {

// Two single-threaded io_contexts running on their own threads.
struct two_loops {
  net::io_context a{1}, b{1};
  net::executor_work_guard<net::io_context::executor_type> ga{a.get_executor()}, gb{b.get_executor()};
  std::thread ta{[this] { a.run(); }}, tb{[this] { b.run(); }};
  ~two_loops() {
    ga.reset();
    gb.reset();
    ta.join();
    tb.join();
  }
};

// Runs `fn(yield)` in a coroutine on `ioc` and returns a future of its result.
template <class Fn>
auto in_coroutine(net::io_context& ioc, Fn fn) {
  using result = decltype(fn(std::declval<net::yield_context>()));
  auto promise = std::make_shared<std::promise<result>>();
  auto future = promise->get_future();
  net::spawn(
      ioc, [promise, fn](net::yield_context yield) { promise->set_value(fn(yield)); },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  return future;
}

void sleep_in(net::yield_context yield, std::chrono::milliseconds d) {
  net::steady_timer t(yield.get_executor(), d);
  t.async_wait(yield);
}

}  // namespace

namespace {

struct queue_run {
  std::vector<int> order;  // in which the waiters got their permits
  int max_inside = 0;      // most permit holders at once
};

// All permits are held while `waiters` coroutines queue up, alternating between the two threads, in a
// definite order; then the permits are released and each waiter holds its permit for 5 ms.
queue_run run_queue(std::size_t permits, int waiters) {
  two_loops loops;
  async_semaphore sem(permits, 100);
  std::vector<async_semaphore::permit> held;
  for (std::size_t i = 0; i < permits; ++i) held.push_back(sem.try_acquire());
  std::atomic<int> inside{0}, max_inside{0};
  std::mutex order_mutex;
  queue_run run;
  std::vector<std::future<bool>> done;
  for (int i = 0; i < waiters; ++i) {
    auto& ioc = i % 2 == 0 ? loops.a : loops.b;
    done.push_back(in_coroutine(ioc, [&, i](net::yield_context yield) {
      auto r = sem.acquire(clock::now() + 10s, nullptr, yield);
      if (r.outcome != async_semaphore::status::acquired) return false;
      const int now = ++inside;
      {
        std::lock_guard lock(order_mutex);
        run.order.push_back(i);
      }
      int seen = max_inside.load();
      while (now > seen && !max_inside.compare_exchange_weak(seen, now)) {
      }
      sleep_in(yield, 5ms);
      --inside;
      return true;
    }));
    while (sem.waiting() < static_cast<std::size_t>(i + 1)) std::this_thread::sleep_for(1ms);
  }
  held.clear();
  for (auto& f : done) CHECK(f.get());
  CHECK(sem.available() == permits);
  CHECK(sem.waiting() == 0);
  run.max_inside = max_inside;
  return run;
}

}  // namespace

TEST_CASE("permits go to waiters in FIFO order across threads") {
  // One permit: each grant follows the previous holder's release, so the order seen is the grant order.
  const auto run = run_queue(1, 10);
  CHECK(run.max_inside == 1);
  CHECK(run.order == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST_CASE("no more holders than permits, across threads") {
  const auto run = run_queue(3, 12);
  CHECK(run.max_inside <= 3);
  CHECK(run.max_inside >= 2);  // they do overlap
  CHECK(run.order.size() == 12);
}

TEST_CASE("a waiter gives up at its deadline and leaves the queue") {
  two_loops loops;
  async_semaphore sem(1, 100);
  auto held = sem.try_acquire();
  REQUIRE(held);
  auto started = clock::now();
  auto status = in_coroutine(loops.a, [&](net::yield_context yield) {
                  return sem.acquire(clock::now() + 50ms, nullptr, yield).outcome;
                }).get();
  CHECK(status == async_semaphore::status::timeout);
  CHECK(clock::now() - started >= 50ms);
  CHECK(sem.waiting() == 0);
  held.release();
  CHECK(sem.available() == 1);
}

TEST_CASE("cancelling a waiter removes it at once, the next waiter gets the permit") {
  two_loops loops;
  async_semaphore sem(1, 100);
  auto held = sem.try_acquire();
  cancel_source cancel;
  auto first = in_coroutine(loops.a, [&](net::yield_context yield) {
    return sem.acquire(clock::now() + 10s, &cancel, yield).outcome;
  });
  while (sem.waiting() < 1) std::this_thread::sleep_for(1ms);
  auto second = in_coroutine(loops.b, [&](net::yield_context yield) {
    auto r = sem.acquire(clock::now() + 10s, nullptr, yield);
    return r.outcome;
  });
  while (sem.waiting() < 2) std::this_thread::sleep_for(1ms);
  net::post(loops.a, [&] { cancel.request_cancel(cancel_reason::client_gone); });
  CHECK(first.get() == async_semaphore::status::cancelled);
  CHECK(sem.waiting() == 1);
  held.release();
  CHECK(second.get() == async_semaphore::status::acquired);
  CHECK(sem.available() == 1);  // the second's permit came back when its result was dropped
}

TEST_CASE("more than max_waiting waiters are refused at once") {
  two_loops loops;
  async_semaphore sem(1, 2);
  auto held = sem.try_acquire();
  std::vector<std::future<async_semaphore::status>> waiters;
  for (int i = 0; i < 2; ++i) {
    waiters.push_back(in_coroutine(loops.a, [&](net::yield_context yield) {
      return sem.acquire(clock::now() + 10s, nullptr, yield).outcome;
    }));
  }
  while (sem.waiting() < 2) std::this_thread::sleep_for(1ms);
  auto refused = in_coroutine(loops.b, [&](net::yield_context yield) {
    return sem.acquire(clock::now() + 10s, nullptr, yield).outcome;
  });
  CHECK(refused.wait_for(2s) == std::future_status::ready);
  CHECK(refused.get() == async_semaphore::status::queue_full);
  held.release();
  for (auto& w : waiters) CHECK(w.get() == async_semaphore::status::acquired);
  CHECK(sem.available() == 1);
}

TEST_CASE("a permit granted as its waiter is cancelled is passed on, not leaked") {
  // Many rounds of release racing a cancel on another thread: whatever wins, the count comes back.
  two_loops loops;
  async_semaphore sem(1, 100);
  for (int round = 0; round < 200; ++round) {
    auto held = sem.try_acquire();
    REQUIRE(held);
    cancel_source cancel;
    auto waiter = in_coroutine(loops.a, [&](net::yield_context yield) {
      auto r = sem.acquire(clock::now() + 10s, &cancel, yield);
      return r.outcome;  // the permit, if any, is released here
    });
    while (sem.waiting() < 1) std::this_thread::yield();
    net::post(loops.a, [&] { cancel.request_cancel(cancel_reason::deadline); });
    held.release();
    const auto outcome = waiter.get();
    CHECK((outcome == async_semaphore::status::acquired || outcome == async_semaphore::status::cancelled));
    CHECK(sem.available() == 1);
    CHECK(sem.waiting() == 0);
  }
}
