// The Redis limiter's links when the server fails: killed and restarted on its port, accepting
// connections but never answering (timeouts at the deadline, the hung link closed and connected again),
// and deadlines shorter than the link's timeout.

#include "gateway/limit/redis_limiter.hpp"
#include "tests/integration/redis_limiter_support.hpp"
#include "tests/support/loopback_socket.hpp"
#include "tests/support/redis_server.hpp"

using namespace gateway;
using namespace test_support::redis;
using namespace std::chrono_literals;
namespace net = boost::asio;
using test_support::redis_server;

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
  std::vector<timed_verdict> took(callers);
  run_together(thread, callers, [&](int i, net::yield_context yield) {
    const auto start = clock::now();
    const auto v = limiter->admit(0, unique_key("hung"), {1, 1}, clock::now() + 5s, yield);
    took[static_cast<std::size_t>(i)] = {
        v, std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - start)};
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
