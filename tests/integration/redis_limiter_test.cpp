// The Redis rate limiter against a real redis-server (tests/integration/redis_server.hpp): GCRA counts,
// limiters of two "replicas" sharing a key, the NOSCRIPT fallback, AUTH, TLS, a server that dies and
// comes back, a server that never answers, deadlines, and pipelining. Each limiter runs on its own
// io_context thread, as on a gateway's I/O thread; the test thread waits for results with a bound.

#include "gateway/limit/redis_limiter.hpp"
#include "tests/integration/redis_server.hpp"
#include "tests/support/loopback_socket.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <random>
#include <set>
#include <thread>

using namespace gateway;
using namespace std::chrono_literals;
namespace net = boost::asio;
using test_support::redis_server;

namespace {

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

std::string unique_key(const std::string& name) {
  static std::mt19937_64 rng(std::random_device{}());
  return "test:" + name + ":" + std::to_string(rng());
}

redis_settings settings_of(const std::string& url, std::chrono::milliseconds timeout = 1s) {
  std::string error;
  auto s = parse_redis_url(url, error);
  INFO(error);
  REQUIRE(s);
  s->timeout = timeout;
  return *s;
}

redis_settings settings_of(const redis_server& server, std::chrono::milliseconds timeout = 1s) {
  auto s = settings_of(server.url(), timeout);
  s.ca_file = server.ca_file();
  return s;
}

std::unique_ptr<redis_limiter> make_limiter(std::vector<io_runner*> threads, const redis_settings& s) {
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

timed_verdict admit_on(io_runner& r, redis_limiter& limiter, const std::string& key, gcra_limit limit,
                       std::chrono::milliseconds deadline = 2s) {
  return run_on(r, [&limiter, key, limit, deadline](net::yield_context yield) {
    const auto start = clock::now();
    auto v = limiter.admit(0, key, limit, clock::now() + deadline, yield);
    return timed_verdict{v, std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - start)};
  });
}

// Polls `done` every 20 ms until it holds or `bound` passes.
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds bound) {
  const auto give_up = std::chrono::steady_clock::now() + bound;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= give_up) return false;
    std::this_thread::sleep_for(20ms);
  }
}

// Waits until the link of thread 0 answers (its first connect runs in the background).
void wait_connected(io_runner& r, redis_limiter& limiter) {
  const auto key = unique_key("warmup");
  REQUIRE(eventually(
      [&] {
        return admit_on(r, limiter, key, {1000, 1000}).verdict.state == redis_verdict::status::ok;
      },
      10s));
}

void sleep_on(net::yield_context yield, std::chrono::milliseconds d) {
  net::steady_timer t(yield.get_executor(), d);
  boost::system::error_code ec;
  t.async_wait(yield[ec]);
}

}  // namespace

TEST_CASE("redis limiter: rate 10/s burst 5 admits 5 at once from idle, then one per 100 ms", "[redis]") {
  redis_server server;
  io_runner thread;
  auto limiter = make_limiter({&thread}, settings_of(server));
  wait_connected(thread, *limiter);
  const auto key = unique_key("exact");
  const gcra_limit limit{10, 5};
  struct run {
    std::vector<redis_verdict> verdicts;
    long long elapsed_ms;
    redis_verdict after_wait;
  };
  auto r = run_on(thread, [&](net::yield_context yield) {
    run out;
    const auto start = clock::now();
    for (int i = 0; i < 6; ++i)
      out.verdicts.push_back(limiter->admit(0, key, limit, clock::now() + 1s, yield));
    out.elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - start).count() + 1;
    sleep_on(yield, out.verdicts.back().retry_after);
    out.after_wait = limiter->admit(0, key, limit, clock::now() + 1s, yield);
    return out;
  });
  INFO("6 admits took " << r.elapsed_ms << " ms");
  for (int i = 0; i < 5; ++i) {
    const auto& v = r.verdicts[static_cast<std::size_t>(i)];
    INFO("admit " << i);
    REQUIRE(v.state == redis_verdict::status::ok);
    CHECK(v.allowed);
    CHECK(v.remaining == 4 - i);
    CHECK(v.retry_after == 0ms);
    CHECK(v.reset.count() <= (i + 1) * 100);
    CHECK(v.reset.count() >= (i + 1) * 100 - r.elapsed_ms);
  }
  const auto& sixth = r.verdicts[5];
  REQUIRE(sixth.state == redis_verdict::status::ok);
  CHECK_FALSE(sixth.allowed);
  CHECK(sixth.remaining == 0);
  CHECK(sixth.retry_after.count() <= 100);
  CHECK(sixth.retry_after.count() >= 100 - r.elapsed_ms);
  CHECK(sixth.reset.count() >= 500 - r.elapsed_ms);
  // One token came back after retry_after.
  REQUIRE(r.after_wait.state == redis_verdict::status::ok);
  CHECK(r.after_wait.allowed);
  CHECK(r.after_wait.remaining == 0);
}

TEST_CASE("redis limiter: a cost of 3 takes 3 tokens and a cost above the burst is never admitted",
          "[redis]") {
  redis_server server;
  io_runner thread;
  auto limiter = make_limiter({&thread}, settings_of(server));
  wait_connected(thread, *limiter);
  const auto key = unique_key("cost");
  auto v = admit_on(thread, *limiter, key, {1, 5, 3}).verdict;
  REQUIRE(v.state == redis_verdict::status::ok);
  CHECK(v.allowed);
  CHECK(v.remaining == 2);
  v = admit_on(thread, *limiter, key, {1, 5, 3}).verdict;
  CHECK_FALSE(v.allowed);
  CHECK(v.retry_after > 900ms);  // one more token needed, at 1 per second
  CHECK(v.retry_after <= 1000ms);
  v = admit_on(thread, *limiter, key, {1, 5, 6}).verdict;
  CHECK(v.state == redis_verdict::status::ok);
  CHECK_FALSE(v.allowed);
  CHECK(v.retry_after == -1ms);
}

TEST_CASE("redis limiter: two limiters on their own threads sharing a key admit the burst once, not twice",
          "[redis]") {
  redis_server server;
  io_runner a, b;
  auto first = make_limiter({&a}, settings_of(server));
  auto second = make_limiter({&b}, settings_of(server));
  wait_connected(a, *first);
  wait_connected(b, *second);
  const auto key = unique_key("shared");
  const gcra_limit limit{0.1, 10};  // one token per 10 s: none comes back during the test
  const auto burst_of = [&](redis_limiter& limiter) {
    return [&limiter, key, limit](net::yield_context yield) {
      int allowed = 0, failed = 0;
      for (int i = 0; i < 15; ++i) {
        const auto v = limiter.admit(0, key, limit, clock::now() + 1s, yield);
        if (v.state != redis_verdict::status::ok) ++failed;
        if (v.state == redis_verdict::status::ok && v.allowed) ++allowed;
      }
      return std::pair(allowed, failed);
    };
  };
  auto from_a = start_on(a, burst_of(*first));
  auto from_b = start_on(b, burst_of(*second));
  const auto [allowed_a, failed_a] = wait(std::move(from_a));
  const auto [allowed_b, failed_b] = wait(std::move(from_b));
  CHECK(failed_a == 0);
  CHECK(failed_b == 0);
  CHECK(allowed_a + allowed_b == 10);
}

TEST_CASE("redis limiter: after SCRIPT FLUSH the script is sent again and admit still works", "[redis]") {
  redis_server server;
  io_runner thread;
  auto limiter = make_limiter({&thread}, settings_of(server));
  wait_connected(thread, *limiter);
  const auto key = unique_key("noscript");
  const gcra_limit limit{0.1, 3};
  CHECK(admit_on(thread, *limiter, key, limit).verdict.remaining == 2);
  REQUIRE(server.cli({"SCRIPT", "EXISTS", redis_limiter::script_sha1()}) == "1");
  REQUIRE(server.cli({"SCRIPT", "FLUSH"}) == "OK");
  REQUIRE(server.cli({"SCRIPT", "EXISTS", redis_limiter::script_sha1()}) == "0");
  const auto v = admit_on(thread, *limiter, key, limit).verdict;
  REQUIRE(v.state == redis_verdict::status::ok);
  CHECK(v.allowed);
  CHECK(v.remaining == 1);
  CHECK(server.cli({"SCRIPT", "EXISTS", redis_limiter::script_sha1()}) == "1");
}

TEST_CASE("redis limiter: AUTH with the right password admits, a wrong one is unavailable at once",
          "[redis]") {
  test_support::redis_server_options with_password;
  with_password.password = "s3cr%t";
  redis_server server(with_password);
  const auto port = std::to_string(server.port());
  SECTION("password only, percent-encoded in the URL") {
    io_runner thread;
    auto limiter = make_limiter({&thread}, settings_of("redis://:s3cr%25t@127.0.0.1:" + port + "/2"));
    wait_connected(thread, *limiter);
    CHECK(admit_on(thread, *limiter, unique_key("auth"), {1, 2}).verdict.allowed);
    CHECK(server.cli({"-n", "2", "DBSIZE"}) != "0");  // SELECT 2 took effect
  }
  SECTION("user and password") {
    io_runner thread;
    auto limiter = make_limiter({&thread}, settings_of("redis://default:s3cr%25t@127.0.0.1:" + port));
    wait_connected(thread, *limiter);
  }
  SECTION("a wrong password") {
    io_runner thread;
    auto limiter = make_limiter({&thread}, settings_of("redis://:wrong@127.0.0.1:" + port, 200ms));
    REQUIRE(eventually([&] { return limiter->link(0).counts().auth_failures.load() >= 2; }, 5s));
    for (int i = 0; i < 20; ++i) {
      const auto r = admit_on(thread, *limiter, unique_key("wrong"), {1, 2}, 2s);
      CHECK(r.verdict.state == redis_verdict::status::unavailable);
      CHECK(r.took <= 200ms + 150ms);
    }
  }
}

TEST_CASE("redis limiter: over TLS, verified against the server's CA", "[redis]") {
  test_support::redis_server_options with_tls;
  with_tls.tls = true;
  redis_server server(with_tls);
  io_runner thread;
  auto limiter = make_limiter({&thread}, settings_of(server));
  wait_connected(thread, *limiter);
  CHECK(admit_on(thread, *limiter, unique_key("tls"), {1, 2}).verdict.allowed);
  CHECK(limiter->link(0).counts().connects.load() == 1);

  SECTION("a certificate from another CA is refused: unavailable, never admitted") {
    test_support::tls_files other;
    auto s = settings_of(server);
    s.ca_file = other.ca_cert;
    io_runner second;
    auto refused = make_limiter({&second}, s);
    REQUIRE(eventually([&] { return refused->link(0).counts().connect_failures.load() >= 2; }, 5s));
    CHECK(admit_on(second, *refused, unique_key("tls"), {1, 2}).verdict.state ==
          redis_verdict::status::unavailable);
    CHECK(refused->link(0).counts().connects.load() == 0);
  }
}

TEST_CASE("redis limiter: a killed server is unavailable at once and once restarted on its port admits again",
          "[redis]") {
  redis_server server;
  io_runner thread;
  const auto timeout = 100ms;
  auto limiter = make_limiter({&thread}, settings_of(server, timeout));
  wait_connected(thread, *limiter);
  const auto key = unique_key("restart");
  server.kill();
  for (int i = 0; i < 20; ++i) {
    const auto r = admit_on(thread, *limiter, key, {1000, 1000}, 2s);
    INFO("admit " << i << " after the kill took " << r.took.count() << " ms");
    CHECK(r.verdict.state != redis_verdict::status::ok);
    CHECK(r.took <= timeout + 150ms);
  }
  // The link tries again in the background and is refused.
  CHECK(eventually([&] { return limiter->link(0).counts().connect_failures.load() >= 1; }, 5s));
  server.start();
  CHECK(eventually(
      [&] {
        return admit_on(thread, *limiter, key, {1000, 1000}).verdict.state == redis_verdict::status::ok;
      },
      10s));
  CHECK(limiter->link(0).counts().connects.load() >= 2);
}

TEST_CASE("redis limiter: a server that never answers times out at the deadline, all waiters return",
          "[redis]") {
  test_support::loopback_socket never_reads(64);  // connects complete in the kernel; nothing is read
  io_runner thread;
  auto s = settings_of("redis://127.0.0.1:" + std::to_string(never_reads.port()), 50ms);
  s.hung_after = 300ms;
  auto limiter = make_limiter({&thread}, s);
  REQUIRE(eventually([&] { return limiter->link(0).counts().connects.load() >= 1; }, 5s));

  // 100 callers at once, on the one thread; each records how long its admit took.
  constexpr int callers = 100;
  auto took = run_on(thread, [&](net::yield_context yield) {
    auto results = std::make_shared<std::vector<timed_verdict>>();
    auto left = std::make_shared<int>(callers);
    auto all_done = std::make_shared<net::steady_timer>(yield.get_executor(), clock::time_point::max());
    for (int i = 0; i < callers; ++i) {
      net::spawn(
          yield.get_executor(),
          [&, results, left, all_done](net::yield_context y) {
            const auto start = clock::now();
            auto v = limiter->admit(0, unique_key("hung"), {1, 1}, clock::now() + 5s, y);
            results->push_back(
                {v, std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - start)});
            if (--*left == 0) all_done->cancel();
          },
          [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
          });
    }
    boost::system::error_code ec;
    all_done->async_wait(yield[ec]);
    return *results;
  });
  REQUIRE(took.size() == callers);
  for (const auto& r : took) {
    CHECK(r.verdict.state == redis_verdict::status::timeout);
    CHECK(r.took >= 45ms);
    CHECK(r.took <= 50ms + 150ms);
  }
  // Replies overdue by hung_after: the link is closed and connected again.
  CHECK(eventually(
      [&] {
        return limiter->link(0).counts().hung.load() >= 1 && limiter->link(0).counts().connects.load() >= 2;
      },
      5s));
}

TEST_CASE("redis limiter: a deadline earlier than the link's timeout is honoured", "[redis]") {
  test_support::loopback_socket never_reads(64);
  io_runner thread;
  auto limiter =
      make_limiter({&thread}, settings_of("redis://127.0.0.1:" + std::to_string(never_reads.port()), 2s));
  REQUIRE(eventually([&] { return limiter->link(0).counts().connects.load() >= 1; }, 5s));
  const auto r = admit_on(thread, *limiter, unique_key("deadline"), {1, 1}, 30ms);
  CHECK(r.verdict.state == redis_verdict::status::timeout);
  CHECK(r.took >= 25ms);
  CHECK(r.took <= 30ms + 150ms);
  // A deadline already past: timeout at once, nothing sent.
  const auto commands = limiter->link(0).counts().commands.load();
  CHECK(admit_on(thread, *limiter, unique_key("deadline"), {1, 1}, -1ms).verdict.state ==
        redis_verdict::status::timeout);
  CHECK(limiter->link(0).counts().commands.load() == commands);
}

namespace {

// `callers` coroutines started together on `thread`, each running `body(index, yield)`; returns when all
// have ended.
void run_together(io_runner& thread, int callers, std::function<void(int, net::yield_context)> body) {
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

}  // namespace

TEST_CASE("redis limiter: 200 concurrent admits on one thread get exact verdicts in few writes", "[redis]") {
  redis_server server;
  io_runner thread;
  auto limiter = make_limiter({&thread}, settings_of(server));
  wait_connected(thread, *limiter);
  const auto& counts = limiter->link(0).counts();
  const auto commands_before = counts.commands.load();
  const auto writes_before = counts.writes.load();
  const auto key = unique_key("pipelined");
  std::vector<redis_verdict> verdicts(200);
  run_together(thread, 200, [&](int i, net::yield_context yield) {
    verdicts[static_cast<std::size_t>(i)] = limiter->admit(0, key, {0.001, 150}, clock::now() + 2s, yield);
  });
  int allowed = 0;
  std::multiset<std::int64_t> remaining;
  for (const auto& v : verdicts) {
    REQUIRE(v.state == redis_verdict::status::ok);
    if (v.allowed) {
      ++allowed;
      remaining.insert(v.remaining);
    }
  }
  CHECK(allowed == 150);
  std::multiset<std::int64_t> expected;
  for (int i = 0; i < 150; ++i) expected.insert(i);
  CHECK(remaining == expected);
  const auto commands = counts.commands.load() - commands_before;
  const auto writes = counts.writes.load() - writes_before;
  INFO(commands << " commands in " << writes << " writes");
  CHECK(commands == 200);
  CHECK(writes * 10 <= commands);
}

// Not run by default: loopback round trip and CPU per admit (report numbers, assert nothing).
TEST_CASE("redis limiter: round trip and CPU per admit", "[redis][.bench]") {
  redis_server server;
  io_runner thread;
  auto limiter = make_limiter({&thread}, settings_of(server));
  wait_connected(thread, *limiter);
  const auto& counts = limiter->link(0).counts();
  for (const int callers : {1, 100}) {
    const int total = 50000;
    const int each = total / callers;
    rusage before{}, after{};
    ::getrusage(RUSAGE_SELF, &before);
    const auto commands = counts.commands.load();
    const auto writes = counts.writes.load();
    std::vector<double> latency_us(static_cast<std::size_t>(callers));
    int failures = 0;
    const auto start = clock::now();
    run_together(thread, callers, [&](int i, net::yield_context yield) {
      const auto key = unique_key("bench");
      const auto begin = clock::now();
      for (int k = 0; k < each; ++k)
        if (limiter->admit(0, key, {1e6, 1e9}, clock::now() + 1s, yield).state != redis_verdict::status::ok)
          ++failures;
      latency_us[static_cast<std::size_t>(i)] =
          std::chrono::duration<double, std::micro>(clock::now() - begin).count() / each;
    });
    const double wall_us = std::chrono::duration<double, std::micro>(clock::now() - start).count();
    ::getrusage(RUSAGE_SELF, &after);
    const auto cpu_us = [](const rusage& r) {
      return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e6 +
             static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
    };
    double mean_latency = 0;
    for (double l : latency_us) mean_latency += l / callers;
    const auto c = static_cast<double>(counts.commands.load() - commands);
    const auto w = static_cast<double>(counts.writes.load() - writes);
    std::cout << callers << " concurrent: " << total << " admits, " << failures << " failed; round trip "
              << mean_latency << " us per admit; wall " << wall_us / total
              << " us per admit; CPU (gateway side) " << (cpu_us(after) - cpu_us(before)) / total
              << " us per admit; " << c / w << " commands per write\n";
    CHECK(failures == 0);
  }
}
