// wake_event on a real io_context: who resumes a waiting coroutine and when, and that a waiting coroutine
// keeps the io_context running until it is woken.

#include "gateway/runtime/wake_event.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/spawn.hpp>
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>

using namespace gateway;
namespace net = boost::asio;
using namespace std::chrono_literals;

namespace {

void rethrow(std::exception_ptr e) {
  if (e) std::rethrow_exception(e);
}

// The order of events when a posted handler wakes a waiting coroutine with `wake`.
std::string wake_trace(void (wake_event::*wake)()) {
  net::io_context ioc{1};
  wake_event w;
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

// notify() is for callers that go on touching their own state: the woken coroutine must not run (and
// possibly end, freeing that state) before the caller has returned.
TEST_CASE("wake_event: notify resumes the waiting coroutine only after the caller has returned") {
  CHECK(wake_trace(&wake_event::notify) == "wait wake returned resumed ");
}

TEST_CASE("wake_event: a notify before the wait makes the wait return at once") {
  net::io_context ioc{1};
  wake_event wake;
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

TEST_CASE("wake_event: a waiting coroutine keeps run() going until it is notified") {
  net::io_context ioc{1};
  wake_event wake;
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
