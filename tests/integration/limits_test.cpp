// Every client and every queue has a bound: slow or idle clients are disconnected on time, and calls
// waiting for a downstream connection give up at the deadline.

#include "tests/support/offer_checks.hpp"

#include <thread>

using namespace test_support;
using namespace std::chrono_literals;

TEST_CASE("a client sending its request head too slowly is disconnected at header_timeout", "[limits]") {
  mock_downstream mock({"--delay", "5ms"});
  seed_config cfg{mock.url()};
  cfg.limits = "  header_timeout: 300ms\n";
  gateway_process gw(cfg.yaml());

  http_connection conn(gw.port());
  auto start = steady_clock::now();
  conn.send_raw("GET " + offer_target("A1") + " HTTP/1.1\r\nHost: x\r\n");
  // One header byte every 50 ms: progress, but the head never completes.
  bool closed = false;
  std::string received;
  while (!closed && elapsed_since(start) < 3s) {
    try {
      conn.send_raw("X");
    } catch (const http_error&) {
      closed = true;  // reset by the gateway
      break;
    }
    closed = conn.wait_closed_by_peer(50ms, &received);
  }
  auto took = elapsed_since(start);
  INFO("closed after " << took.count() << " ms; received: " << received.substr(0, 200));
  CHECK(closed);
  CHECK(took >= 250ms);
  CHECK(took < 1000ms);
  CHECK(sum_over_calls(mock, mock.stats(), "requests") == 0);
  check_clean_exit(gw);
}

TEST_CASE("an idle keep-alive client connection is closed at idle_timeout", "[limits]") {
  mock_downstream mock({"--delay", "5ms"});
  seed_config cfg{mock.url()};
  cfg.limits = "  idle_timeout: 300ms\n";
  gateway_process gw(cfg.yaml());

  http_connection conn(gw.port());
  check_offer(conn.get(offer_target("A1")), "A1");
  auto start = steady_clock::now();
  std::string received;
  CHECK(conn.wait_closed_by_peer(3s, &received));
  auto took = elapsed_since(start);
  INFO("closed after " << took.count() << " ms");
  CHECK(took >= 250ms);
  CHECK(took < 1000ms);
  CHECK(received.empty());
  check_clean_exit(gw);
}

TEST_CASE("a client that stops reading a large answer is disconnected at write_timeout", "[limits]") {
  // Six 2 MiB answers make a 12 MiB response, more than the loopback socket buffers hold.
  std::vector<std::string> args = {"--delay", "5ms"};
  for (const auto& call : seed_calls) args.insert(args.end(), {"--path", call + "=big"});
  mock_downstream mock(args);
  seed_config cfg{mock.url()};
  cfg.limits = "  write_timeout: 1s\n";  // the reader below must take 12 MiB within it on a busy machine
  cfg.downstream_extra = "    max_response_bytes: 4194304\n";
  cfg.deadline = "3s";
  gateway_process gw(cfg.yaml());

  http_connection stalled(gw.port());
  stalled.send_request("GET", offer_target("A1"));
  std::this_thread::sleep_for(2500ms);  // the stalled client: the gateway's write times out meanwhile
  const auto start = steady_clock::now();
  std::string received;
  CHECK(stalled.wait_closed_by_peer(5s, &received));  // reads what was sent, then the end
  INFO("received " << received.size() << " bytes");
  CHECK(received.size() < 12u * 1024 * 1024);
  CHECK(elapsed_since(start) < 4s);

  // A client that reads gets the whole answer meanwhile.
  http_connection reader(gw.port());
  const auto whole = reader.get(offer_target("A2"), {}, 10s);
  CHECK(whole.status == 200);
  CHECK(whole.body.size() > 12u * 1024 * 1024);
  check_clean_exit(gw);
}

TEST_CASE("a request body over max_body_bytes is refused", "[limits]") {
  mock_downstream mock({"--delay", "5ms"});
  seed_config cfg{mock.url()};
  cfg.limits = "  max_body_bytes: 1KiB\n";
  gateway_process gw(cfg.yaml());

  http_connection conn(gw.port());
  try {
    auto res = conn.request("POST", offer_target("A1"), {}, std::string(8192, 'b'), 3s);
    CHECK(res.status >= 400);
    CHECK(res.status < 500);
  } catch (const http_error& e) {
    INFO("connection ended without a full answer: " << e.what());  // reset with unread input: acceptable
  }
  CHECK(sum_over_calls(mock, mock.stats(), "requests") == 0);
  CHECK(gw.running());
  check_offer(http_get(gw.port(), offer_target("A2")), "A2");
}

TEST_CASE("calls queued for a downstream connection give up at the deadline", "[limits][deadline]") {
  mock_downstream mock({"--delay", "250ms"});
  seed_config cfg{mock.url()};
  cfg.deadline = "500ms";
  cfg.max_connections = 2;  // one connection per downstream and I/O thread: calls queue for it
  cfg.threads = 2;
  gateway_process gw(cfg.yaml());

  constexpr int clients = 20;
  std::vector<http_connection> conns;
  for (int i = 0; i < clients; ++i) {
    conns.emplace_back(gw.port());
    // A first request makes sure the connection is accepted and served, so that each burst below reaches
    // the gateway at once and all deadlines are close together.
    check_error(conns.back().get("/warm-up"), 404);
  }

  // Several rounds: the moment a connection frees up at one request's deadline, the next queued request
  // is at its own deadline too, and a call started then must still be cut at once.
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    auto before = mock.stats();
    auto start = steady_clock::now();
    for (int i = 0; i < clients; ++i)
      conns[static_cast<std::size_t>(i)].send_request("GET", offer_target(numbered_sku("Q", i)));

    int healthy_entries = 0;
    for (int i = 0; i < clients; ++i) {
      auto res = conns[static_cast<std::size_t>(i)].read_response(10s);
      auto took = elapsed_since(start);
      INFO("request " << i << " answered after " << took.count() << " ms: " << res.status << " "
                      << res.header("x-degraded").value_or("") << " " << res.body.substr(0, 300));
      CHECK(took <= 900ms);  // deadline + a generous margin, even for the last in the queue
      REQUIRE(res.status == 200);
      auto body = res.json();
      REQUIRE(body.is_array());
      REQUIRE(body.size() == seed_calls.size());
      for (const auto& entry : body) {
        if (entry.value("degraded", true)) {
          CHECK(entry.value("priceCent", 0) == fallback_price);
        } else {
          ++healthy_entries;
        }
      }
    }
    // Two connections per downstream serve about two 250 ms calls each in 500 ms; the rest queue out.
    CHECK(healthy_entries >= 6);
    CHECK(healthy_entries < 6 * clients);

    // Calls whose request ran out of time while queued were dropped, not sent: far fewer than one per
    // request reached each downstream.
    auto after = mock.stats();
    INFO(after.dump());
    for (const auto& call : seed_calls) {
      CHECK(mock.path_counter(after, call, "requests") - mock.path_counter(before, call, "requests") <
            clients);
    }
  }

  // Nor are they sent later. Waiting for the absence of requests needs a pause: a late call would come
  // within one mock delay of a connection freeing.
  auto answered_stats = mock.stats();
  std::this_thread::sleep_for(300ms);
  auto later = mock.stats();
  INFO(later.dump());
  CHECK(sum_over_calls(mock, later, "requests") == sum_over_calls(mock, answered_stats, "requests"));
  check_clean_exit(gw);
}
