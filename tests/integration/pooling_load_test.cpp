// Downstream connections are pooled with keep-alive, and the gateway serves many requests at once.

#include "tests/support/offer_checks.hpp"

#include <csignal>
#include <memory>
#include <thread>

using namespace test_support;
using namespace std::chrono_literals;

TEST_CASE("200 sequential requests reuse pooled downstream connections", "[pool]") {
  mock_downstream mock({"--delay", "1ms"});
  seed_config cfg{mock.url()};
  cfg.threads = 2;
  gateway_process gw(cfg.yaml());

  auto before = mock.stats();
  http_connection conn(gw.port());
  constexpr int requests = 200;
  int ok = 0;
  for (int i = 0; i < requests; ++i) {
    auto res = conn.get(offer_target(numbered_sku("S", i)));
    if (res.status == 200 && !res.has_header("x-degraded")) ++ok;
  }
  CHECK(ok == requests);

  auto after = mock.stats();
  INFO("before " << before.dump() << "\nafter " << after.dump());
  CHECK(sum_over_calls(mock, after, "requests") == 6 * requests);
  // One more connection is the /__stats request itself.
  auto opened =
      after["connections_total"].get<long long>() - before["connections_total"].get<long long>() - 1;
  CHECK(opened >= 6);
  CHECK(opened <= static_cast<long long>(6 * cfg.threads * 2));
  check_clean_exit(gw);
}

TEST_CASE("500 concurrent requests are all answered 200 with six healthy entries", "[load]") {
  mock_downstream mock({"--delay", "50ms"});
  seed_config cfg{mock.url()};
  cfg.deadline = "5s";  // about capacity, not the deadline: at 64 connections per downstream calls queue
  gateway_process gw(cfg.yaml());

  constexpr int threads = 5;
  constexpr int per_thread = 100;
  struct outcome {
    int healthy = 0;
    std::vector<std::string> problems;
  };
  std::vector<outcome> outcomes(threads);
  std::vector<std::thread> workers;
  auto start = steady_clock::now();
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      auto& out = outcomes[static_cast<std::size_t>(t)];
      try {
        // Open every connection and send every request first, so all 500 are in flight together.
        std::vector<http_connection> conns;
        std::vector<std::string> skus;
        for (int i = 0; i < per_thread; ++i) {
          skus.push_back(numbered_sku(numbered_sku("L", t) + "_", i));
          conns.emplace_back(gw.port(), 5000ms);
          conns.back().send_request("GET", offer_target(skus.back()));
        }
        for (int i = 0; i < per_thread; ++i) {
          auto res = conns[static_cast<std::size_t>(i)].read_response(15s);
          bool healthy = res.status == 200 && !res.has_header("x-degraded");
          if (healthy) {
            auto body = nlohmann::json::parse(res.body, nullptr, false);
            healthy = body.is_array() && body.size() == seed_calls.size();
            for (std::size_t c = 0; healthy && c < seed_calls.size(); ++c) {
              healthy = body[c].value("source", "") == seed_calls[c] &&
                        body[c].value("degraded", true) == false &&
                        body[c].value("sku", "") == skus[static_cast<std::size_t>(i)];
            }
          }
          if (healthy) {
            ++out.healthy;
          } else if (out.problems.size() < 5) {
            out.problems.push_back(std::to_string(res.status) + " " + res.header("x-degraded").value_or("") +
                                   " " + res.body.substr(0, 300));
          }
        }
      } catch (const std::exception& e) {
        out.problems.push_back(std::string("exception: ") + e.what());
      }
    });
  }
  for (auto& w : workers) w.join();
  auto took = elapsed_since(start);

  int healthy = 0;
  for (const auto& o : outcomes) {
    healthy += o.healthy;
    for (const auto& p : o.problems) UNSCOPED_INFO(p);
  }
  INFO("500 requests took " << took.count() << " ms");
  CHECK(healthy == threads * per_thread);
  auto stats = mock.stats();
  INFO(stats.dump());
  CHECK(sum_over_calls(mock, stats, "requests") == 6 * threads * per_thread);
  check_clean_exit(gw);
}

TEST_CASE("pooled connections closed by a restarted downstream are not served as failures", "[pool]") {
  auto mock = std::make_unique<mock_downstream>(std::vector<std::string>{"--delay", "5ms"});
  const auto port = mock->port();
  gateway_process gw(seed_config{mock->url()}.yaml());
  http_connection conn(gw.port());
  for (int i = 0; i < 5; ++i) check_offer(conn.get(offer_target(numbered_sku("R", i))), numbered_sku("R", i));

  // The downstream restarts on the same port: every pooled connection was closed by it.
  REQUIRE(mock->process().stop(SIGTERM, 5s));
  mock.reset();
  mock = std::make_unique<mock_downstream>(std::vector<std::string>{"--delay", "5ms"},
                                           "127.0.0.1:" + std::to_string(port));
  REQUIRE(mock->port() == port);

  for (int i = 5; i < 10; ++i)
    check_offer(conn.get(offer_target(numbered_sku("R", i))), numbered_sku("R", i));
  check_clean_exit(gw);
}

TEST_CASE("a downstream that is down then comes back is used again", "[pool]") {
  auto mock = std::make_unique<mock_downstream>(std::vector<std::string>{"--delay", "5ms"});
  const auto port = mock->port();
  gateway_process gw(seed_config{mock->url()}.yaml());
  http_connection conn(gw.port());
  check_offer(conn.get(offer_target("U1")), "U1");

  REQUIRE(mock->process().stop(SIGTERM, 5s));
  mock.reset();
  auto start = steady_clock::now();
  check_offer(conn.get(offer_target("U2")), "U2", seed_calls);  // refused: all fallbacks, at once
  CHECK(elapsed_since(start) < 600ms);

  mock = std::make_unique<mock_downstream>(std::vector<std::string>{"--delay", "5ms"},
                                           "127.0.0.1:" + std::to_string(port));
  check_offer(conn.get(offer_target("U3")), "U3");
  check_clean_exit(gw);
}
