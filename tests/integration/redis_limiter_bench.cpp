// Not run by default (tag [.bench]): the round trip and the gateway-side CPU of one admit on loopback, with
// 1 and with 100 concurrent callers on one thread, and the commands each write carried.

#include "gateway/limit/redis_limiter.hpp"
#include "tests/integration/redis_limiter_support.hpp"
#include "tests/support/redis_server.hpp"

#include <sys/resource.h>

#include <iostream>
#include <sstream>
#include <string>

using namespace gateway;
using namespace test_support::redis;
using namespace std::chrono_literals;
namespace net = boost::asio;
using test_support::redis_server;

namespace {

// used_cpu_sys + used_cpu_user of INFO CPU, in microseconds.
double server_cpu_us(const redis_server& server) {
  std::istringstream info(server.cli({"INFO", "CPU"}));
  double total = 0;
  for (std::string line; std::getline(info, line);)
    if (line.starts_with("used_cpu_sys:") || line.starts_with("used_cpu_user:"))
      total += std::stod(line.substr(line.find(':') + 1)) * 1e6;
  return total;
}

}  // namespace

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
    const double server_before = server_cpu_us(server);
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
    const double server_used = server_cpu_us(server) - server_before;
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
              << " us per admit; CPU (redis-server) " << server_used / total << " us per admit; " << c / w
              << " commands per write\n";
    CHECK(failures == 0);
  }
}
