// No downstream work outlives its request: a client that goes away cancels every call at once, and the
// gateway writes nothing to it.

#include "tests/support/offer_checks.hpp"

using namespace test_support;
using namespace std::chrono_literals;

namespace {

// Sends one request and waits until the mock has received all six calls.
void start_request_and_wait_for_calls(http_connection& conn, mock_downstream& mock, const std::string& sku) {
  conn.send_request("GET", offer_target(sku));
  auto stats = mock.wait_stats([&](const auto& s) { return sum_over_calls(mock, s, "requests") == 6; });
  INFO(stats.dump());
  REQUIRE(sum_over_calls(mock, stats, "requests") == 6);
  REQUIRE(sum_over_calls(mock, stats, "cancelled") == 0);
}

void restore_all(mock_downstream& mock) {
  for (const auto& call : seed_calls) mock.set_mode(call, "ok", "10ms");
}

}  // namespace

TEST_CASE("client closing mid-request cancels all six calls at once", "[cancel]") {
  mock_downstream mock(all_hang_args("10ms"));
  seed_config cfg{mock.url()};
  cfg.deadline = "5s";
  gateway_process gw(cfg.yaml());

  http_connection conn(gw.port());
  start_request_and_wait_for_calls(conn, mock, "X1");

  auto closed_at = steady_clock::now();
  conn.close();
  auto stats =
      mock.wait_stats([&](const auto& s) { return sum_over_calls(mock, s, "cancelled") == 6; }, 1000ms);
  auto took = elapsed_since(closed_at);
  INFO(stats.dump() << "\ncancelled " << took.count() << " ms after the close");
  for (const auto& call : seed_calls) CHECK(mock.path_counter(stats, call, "cancelled") == 1);
  CHECK(took < 1000ms);  // the deadline is 5 s away
  CHECK(gw.running());

  // The gateway is fine afterwards.
  restore_all(mock);
  check_offer(http_get(gw.port(), offer_target("X2")), "X2");
}

TEST_CASE("client resetting its connection mid-request cancels all calls", "[cancel]") {
  mock_downstream mock(all_hang_args("10ms"));
  seed_config cfg{mock.url()};
  cfg.deadline = "5s";
  gateway_process gw(cfg.yaml());

  http_connection conn(gw.port());
  start_request_and_wait_for_calls(conn, mock, "X3");

  conn.reset();
  auto stats =
      mock.wait_stats([&](const auto& s) { return sum_over_calls(mock, s, "cancelled") == 6; }, 1000ms);
  INFO(stats.dump());
  CHECK(sum_over_calls(mock, stats, "cancelled") == 6);
  check_clean_exit(gw);
}

TEST_CASE("client half-closing mid-request: calls cancelled and nothing written back", "[cancel]") {
  mock_downstream mock(all_hang_args("10ms"));
  seed_config cfg{mock.url()};
  cfg.deadline = "3s";
  gateway_process gw(cfg.yaml());

  http_connection conn(gw.port());
  start_request_and_wait_for_calls(conn, mock, "X4");

  conn.shutdown_write();  // the gateway reads end of stream: the client is gone
  auto stats =
      mock.wait_stats([&](const auto& s) { return sum_over_calls(mock, s, "cancelled") == 6; }, 1000ms);
  INFO(stats.dump());
  CHECK(sum_over_calls(mock, stats, "cancelled") == 6);

  std::string received;
  CHECK(conn.wait_closed_by_peer(4s, &received));  // even after the 3 s deadline passes
  CHECK(received.empty());
  check_clean_exit(gw);
}

TEST_CASE("a client half-closing right behind its request is noticed at once", "[cancel]") {
  // On kept-alive connections (the gateway already waits for their next request), each client sends a
  // request and its end of stream back to back: they arrive together, and nothing more will arrive to
  // announce the close.
  mock_downstream mock({"--delay", "10ms"});
  seed_config cfg{mock.url()};
  cfg.deadline = "5s";
  gateway_process gw(cfg.yaml());

  constexpr int clients = 10;
  std::vector<http_connection> conns;
  for (int i = 0; i < clients; ++i) {
    conns.emplace_back(gw.port());
    check_offer(conns.back().get(offer_target(numbered_sku("K", i))), numbered_sku("K", i));
  }
  for (const auto& call : seed_calls) mock.set_mode(call, "hang", "10ms");
  const auto before = mock.stats();
  for (int i = 0; i < clients; ++i) {
    conns[static_cast<std::size_t>(i)].send_raw("GET " + offer_target(numbered_sku("H", i)) +
                                                " HTTP/1.1\r\nHost: x\r\n\r\n");
    conns[static_cast<std::size_t>(i)].shutdown_write();
  }
  // Noticed at once: each connection is closed with nothing written (the deadline is 5 s away), and
  // every call that reached the downstream is cancelled.
  const auto start = steady_clock::now();
  for (auto& conn : conns) {
    std::string received;
    CHECK(conn.wait_closed_by_peer(2s, &received));
    CHECK(received.empty());
  }
  CHECK(elapsed_since(start) < 2s);
  auto stats = mock.wait_stats(
      [&](const auto& s) {
        return sum_over_calls(mock, s, "requests") - sum_over_calls(mock, before, "requests") ==
               sum_over_calls(mock, s, "cancelled");
      },
      2000ms);
  INFO(stats.dump());
  CHECK(sum_over_calls(mock, stats, "requests") - sum_over_calls(mock, before, "requests") ==
        sum_over_calls(mock, stats, "cancelled"));
  check_clean_exit(gw);
}

TEST_CASE("many clients leaving mid-request leave no calls behind", "[cancel]") {
  mock_downstream mock(all_hang_args("10ms"));
  seed_config cfg{mock.url()};
  cfg.deadline = "5s";
  gateway_process gw(cfg.yaml());

  constexpr int clients = 20;
  std::vector<http_connection> conns;
  for (int i = 0; i < clients; ++i) {
    conns.emplace_back(gw.port());
    conns.back().send_request("GET", offer_target(numbered_sku("Y", i)));
  }
  auto stats =
      mock.wait_stats([&](const auto& s) { return sum_over_calls(mock, s, "requests") == 6 * clients; });
  REQUIRE(sum_over_calls(mock, stats, "requests") == 6 * clients);

  conns.clear();
  stats = mock.wait_stats([&](const auto& s) { return sum_over_calls(mock, s, "cancelled") == 6 * clients; },
                          1500ms);
  INFO(stats.dump());
  CHECK(sum_over_calls(mock, stats, "cancelled") == 6 * clients);
  stats = mock.wait_stats([](const auto& s) { return s.value("connections_open", -1) <= 1; }, 1000ms);
  CHECK(stats.value("connections_open", -1) <= 1);  // only the /__stats request itself
  check_clean_exit(gw);
}

TEST_CASE("SIGTERM with requests in flight: the gateway exits 0 and leaves no call behind", "[cancel]") {
  mock_downstream mock(all_hang_args("10ms"));
  seed_config cfg{mock.url()};
  cfg.deadline = "1s";
  gateway_process gw(cfg.yaml());

  constexpr int clients = 5;
  std::vector<http_connection> conns;
  for (int i = 0; i < clients; ++i) {
    conns.emplace_back(gw.port());
    conns.back().send_request("GET", offer_target(numbered_sku("Z", i)));
  }
  auto stats =
      mock.wait_stats([&](const auto& s) { return sum_over_calls(mock, s, "requests") == 6 * clients; });
  REQUIRE(sum_over_calls(mock, stats, "requests") == 6 * clients);

  auto start = steady_clock::now();
  check_clean_exit(gw, 3s);
  INFO("exited " << elapsed_since(start).count() << " ms after SIGTERM");
  stats = mock.wait_stats([&](const auto& s) { return sum_over_calls(mock, s, "cancelled") == 6 * clients; });
  INFO(stats.dump());
  CHECK(sum_over_calls(mock, stats, "cancelled") == 6 * clients);
  // Each client got an answer or a closed connection, never a hang.
  for (auto& conn : conns) {
    std::string received;
    CHECK(conn.wait_closed_by_peer(1s, &received));
  }
}
