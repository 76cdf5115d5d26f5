// The seed route with healthy downstreams: shape of the answer, response modes, field allowlists and
// keep-alive on the client side.

#include "tests/support/offer_checks.hpp"

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>

using namespace test_support;
using namespace std::chrono_literals;

TEST_CASE("all downstreams healthy: 200 with six entries in call order, none degraded", "[aggregate]") {
  mock_downstream mock({"--delay", "20ms"});
  gateway_process gw(seed_config{mock.url()}.yaml());

  auto start = steady_clock::now();
  auto res = http_get(gw.port(), offer_target("A1"));
  auto took = elapsed_since(start);

  check_offer(res, "A1");
  CHECK(took < 400ms);  // the calls run in parallel: ~20 ms, well before the 800 ms deadline
  auto stats = mock.stats();
  for (const auto& call : seed_calls) CHECK(mock.path_counter(stats, call, "requests") == 1);
  check_clean_exit(gw);
}

TEST_CASE("calls run in parallel: six 150 ms downstreams answer in about 150 ms", "[aggregate]") {
  mock_downstream mock({"--delay", "150ms"});
  gateway_process gw(seed_config{mock.url()}.yaml());

  auto start = steady_clock::now();
  auto res = http_get(gw.port(), offer_target("B-2"));
  auto took = elapsed_since(start);

  check_offer(res, "B-2");
  CHECK(took >= 140ms);
  CHECK(took < 450ms);  // sequential calls would take 900 ms
}

TEST_CASE("response: object keys each entry by call name", "[aggregate]") {
  mock_downstream mock({"--delay", "10ms", "--path", "coupon=fail"});
  seed_config cfg{mock.url()};
  cfg.response = "object";
  gateway_process gw(cfg.yaml());

  auto res = http_get(gw.port(), offer_target("obj_1"));
  INFO(res.body);
  REQUIRE(res.status == 200);
  CHECK(res.degraded_calls().value_or("") == "coupon");
  auto body = res.json();
  REQUIRE(body.is_object());
  CHECK(body.size() == seed_calls.size());
  for (const auto& call : seed_calls) {
    REQUIRE(body.contains(call));
    if (call == "coupon") {
      check_fallback_entry(body[call], call);
    } else {
      check_healthy_entry(body[call], call, "obj_1");
    }
  }
}

TEST_CASE("fields allowlist keeps only the listed fields plus source and degraded", "[aggregate]") {
  mock_downstream mock({"--delay", "10ms"});
  seed_config cfg{mock.url()};
  cfg.fields["inventory"] = {"stock"};
  cfg.fields["channel-price"] = {"priceCent", "sku"};
  gateway_process gw(cfg.yaml());

  auto res = http_get(gw.port(), offer_target("F1"));
  INFO(res.body);
  REQUIRE(res.status == 200);
  auto body = res.json();
  REQUIRE(body.is_array());
  REQUIRE(body.size() == seed_calls.size());

  const auto& inventory = body[0];
  CHECK(inventory.size() == 3);
  CHECK(inventory.contains("stock"));
  CHECK_FALSE(inventory.contains("priceCent"));
  CHECK_FALSE(inventory.contains("sku"));
  CHECK(inventory.value("source", "") == "inventory");
  CHECK(inventory.value("degraded", true) == false);

  const auto& price = body[1];
  CHECK(price.size() == 4);
  CHECK(price.contains("priceCent"));
  CHECK(price.value("sku", "") == "F1");
  CHECK_FALSE(price.contains("stock"));
  CHECK(price.value("source", "") == "channel-price");

  for (std::size_t i = 2; i < seed_calls.size(); ++i) check_healthy_entry(body[i], seed_calls[i], "F1");
}

TEST_CASE("keep-alive: sequential requests on one client connection are answered in order", "[aggregate]") {
  mock_downstream mock({"--delay", "5ms"});
  gateway_process gw(seed_config{mock.url()}.yaml());

  http_connection conn(gw.port());
  for (const std::string sku : {"K1", "K2", "K3", "K4", "K5"}) {
    auto res = conn.get(offer_target(sku));
    check_offer(res, sku);
  }
}

TEST_CASE("keep-alive: pipelined requests are answered in order", "[aggregate]") {
  mock_downstream mock({"--delay", "5ms"});
  gateway_process gw(seed_config{mock.url()}.yaml());

  const std::vector<std::string> skus = {"P1", "P2", "P3", "P4"};
  std::string burst;
  for (const auto& sku : skus) burst += "GET " + offer_target(sku) + " HTTP/1.1\r\nHost: test\r\n\r\n";
  http_connection conn(gw.port());
  conn.send_raw(burst);
  for (const auto& sku : skus) check_offer(conn.read_response(), sku);
}

namespace {

// CPU time (user + system) the process has used so far, from /proc/PID/stat (clock ticks).
std::chrono::milliseconds process_cpu_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));  // after "PID (COMM) "
  std::string field;
  long long ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stoll(field);  // utime, stime
  }
  return std::chrono::milliseconds(ticks * 1000 / sysconf(_SC_CLK_TCK));
}

}  // namespace

// A request that arrives while the one before it is still being handled waits in the socket unread; the
// gateway must not spin on it (a readiness wait that reports unread input at every event-loop pass).
TEST_CASE("keep-alive: a pipelined request waiting behind a slow one costs no CPU while it waits",
          "[aggregate]") {
  mock_downstream mock({"--delay", "600ms"});
  seed_config config{mock.url()};
  config.deadline = "2s";
  gateway_process gw(config.yaml());

  http_connection conn(gw.port());
  check_offer(conn.get(offer_target("W0")), "W0");  // connections and threads warmed up
  const auto before = process_cpu_time(gw.process().pid());
  // The second request comes once the first is read and handled: it stays in the socket until then.
  conn.send_raw("GET " + offer_target("W1") + " HTTP/1.1\r\nHost: test\r\n\r\n");
  std::this_thread::sleep_for(100ms);
  conn.send_raw("GET " + offer_target("W2") + " HTTP/1.1\r\nHost: test\r\n\r\n");
  check_offer(conn.read_response(), "W1");
  check_offer(conn.read_response(), "W2");
  const auto used = process_cpu_time(gw.process().pid()) - before;
  // Two idle waits of 600 ms: a few milliseconds of work. Spinning through the first costs most of it.
  CHECK(used < 200ms);
}

TEST_CASE("Connection: close is honoured after the answer", "[aggregate]") {
  mock_downstream mock({"--delay", "5ms"});
  gateway_process gw(seed_config{mock.url()}.yaml());

  http_connection conn(gw.port());
  auto res = conn.get(offer_target("C1"), {{"Connection", "close"}});
  check_offer(res, "C1");
  CHECK(conn.wait_closed_by_peer(2s));
}

TEST_CASE("an HTTP/1.0 request is answered and its connection closed", "[aggregate]") {
  mock_downstream mock({"--delay", "5ms"});
  gateway_process gw(seed_config{mock.url()}.yaml());

  http_connection conn(gw.port());
  conn.send_raw("GET " + offer_target("H10") + " HTTP/1.0\r\n\r\n");
  check_offer(conn.read_response(), "H10");
  CHECK(conn.wait_closed_by_peer(2s));
  check_clean_exit(gw);
}
