// The Redis rate limiter against a real redis-server (tests/support/redis_server.hpp): GCRA counts and
// costs, limiters of two "replicas" sharing a key, the NOSCRIPT fallback, AUTH and SELECT, TLS, and
// pipelining. Each limiter runs on its own io_context thread, as on a gateway's I/O thread.

#include "gateway/limit/redis_limiter.hpp"
#include "tests/integration/redis_limiter_support.hpp"
#include "tests/support/redis_server.hpp"

#include <set>

using namespace gateway;
using namespace test_support::redis;
using namespace std::chrono_literals;
namespace net = boost::asio;
using test_support::redis_server;

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
