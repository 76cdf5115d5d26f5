#pragma once
// Shared by the Redis limiter tests: an io_context thread standing for a gateway I/O thread, coroutines
// started on it from the test thread and waited for with a bound, settings from a URL or a
// redis_server, limiters, timed admits, bounded polling. Assertions use Catch2.

#include "gateway/limit/redis_limiter.hpp"
#include "tests/support/redis_server.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <catch2/catch.hpp>

#include <functional>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace test_support::redis {

using namespace gateway;
using namespace std::chrono_literals;
namespace net = boost::asio;

// An I/O thread: one io_context, run by its own thread until the runner is destroyed and nothing is left.
struct io_runner {
  net::io_context ioc{1};
  net::executor_work_guard<net::io_context::executor_type> work = net::make_work_guard(ioc);
  std::thread thread{[this] { ioc.run(); }};
  ~io_runner() {
    work.reset();
    thread.join();  // a link that did not end its coroutines after close() hangs here (and the test)
  }
};

// Runs f(yield) in a coroutine on `r` and returns its future result.
template <typename F>
auto start_on(io_runner& r, F f) {
  using result = decltype(f(std::declval<net::yield_context>()));
  auto done = std::make_shared<std::promise<result>>();
  auto future = done->get_future();
  net::spawn(
      r.ioc, [f](net::yield_context yield) { return f(yield); },
      [done](std::exception_ptr e, result value) {
        if (e)
          done->set_exception(e);
        else
          done->set_value(std::move(value));
      });
  return future;
}

template <typename T>
T wait(std::future<T> f) {
  if (f.wait_for(30s) != std::future_status::ready) throw std::runtime_error("no result within 30 s");
  return f.get();
}

template <typename F>
auto run_on(io_runner& r, F f) {
  return wait(start_on(r, std::move(f)));
}

inline std::string unique_key(const std::string& name) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return "test:" + name + ":" + std::to_string(rng());
}

inline redis_settings settings_of(const std::string& url, std::chrono::milliseconds timeout = 1s) {
  std::string error;
  auto s = parse_redis_url(url, error);
  INFO(error);
  REQUIRE(s);
  s->timeout = timeout;
  return *s;
}

inline redis_settings settings_of(const redis_server& server, std::chrono::milliseconds timeout = 1s) {
  auto s = settings_of(server.url(), timeout);
  s.ca_file = server.ca_file();
  return s;
}

inline std::unique_ptr<redis_limiter> make_limiter(std::vector<io_runner*> threads, const redis_settings& s) {
  std::vector<net::any_io_executor> executors;
  for (auto* t : threads) executors.push_back(t->ioc.get_executor());
  std::string error;
  auto limiter = redis_limiter::make(executors, s, error);
  INFO(error);
  REQUIRE(limiter);
  return limiter;
}

struct timed_verdict {
  redis_verdict verdict;
  std::chrono::milliseconds took;
};

inline timed_verdict admit_on(io_runner& r, redis_limiter& limiter, const std::string& key, gcra_limit limit,
                              std::chrono::milliseconds deadline = 2s) {
  return run_on(r, [&limiter, key, limit, deadline](net::yield_context yield) {
    const auto start = clock::now();
    auto v = limiter.admit(0, key, limit, clock::now() + deadline, yield);
    return timed_verdict{v, std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - start)};
  });
}

// Polls `done` every 20 ms until it holds or `bound` passes.
inline bool eventually(const std::function<bool()>& done, std::chrono::milliseconds bound) {
  const auto give_up = std::chrono::steady_clock::now() + bound;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= give_up) return false;
    std::this_thread::sleep_for(20ms);
  }
}

// Waits until the link of thread 0 answers (its first connect runs in the background).
inline void wait_connected(io_runner& r, redis_limiter& limiter) {
  const auto key = unique_key("warmup");
  REQUIRE(eventually(
      [&] {
        return admit_on(r, limiter, key, {1000, 1000}).verdict.state == redis_verdict::status::ok;
      },
      10s));
}

inline void sleep_on(net::yield_context yield, std::chrono::milliseconds d) {
  net::steady_timer t(yield.get_executor(), d);
  boost::system::error_code ec;
  t.async_wait(yield[ec]);
}

// `callers` coroutines started together on `thread`, each running `body(index, yield)`; returns when all
// have ended.
inline void run_together(io_runner& thread, int callers, std::function<void(int, net::yield_context)> body) {
  run_on(thread, [&](net::yield_context yield) {
    auto left = std::make_shared<int>(callers);
    auto all_done = std::make_shared<net::steady_timer>(yield.get_executor(), clock::time_point::max());
    for (int i = 0; i < callers; ++i) {
      net::spawn(
          yield.get_executor(),
          [&body, i, left, all_done](net::yield_context y) {
            body(i, y);
            if (--*left == 0) all_done->cancel();
          },
          [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
          });
    }
    boost::system::error_code ec;
    all_done->async_wait(yield[ec]);
    return 0;
  });
}

}  // namespace test_support::redis
