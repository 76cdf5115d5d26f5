// One bad downstream must not spoil the answer: whatever way a call fails, its entry becomes the fallback,
// the answer stays 200 and lists it in X-Degraded; only a required call turns the answer into an error.

#include "tests/support/offer_checks.hpp"

#include <chrono>
#include <string>
#include <thread>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

// Starts a mock where `call` answers in `mode`, asks the gateway once (deadline `deadline`), checks that
// exactly `call` is degraded, and returns how long the answer took.
milliseconds expect_only_degraded(const std::string& call, const std::string& mode,
                                  const std::string& deadline = "800ms") {
  mock_downstream mock({"--delay", "20ms", "--path", call + "=" + mode});
  seed_config cfg{mock.url()};
  cfg.deadline = deadline;
  gateway_process gw(cfg.yaml());

  auto start = steady_clock::now();
  auto res = http_get(gw.port(), offer_target("D1"));
  auto took = elapsed_since(start);

  INFO("mode " << mode << " on " << call << ", answered in " << took.count() << " ms");
  check_offer(res, "D1", {call});
  CHECK(gw.running());
  CHECK(mock.path_counter(mock.stats(), call, "requests") == 1);
  return took;
}

}  // namespace

TEST_CASE("a chunked answer with many header fields is used like any other", "[degraded]") {
  mock_downstream mock({"--delay", "20ms", "--path", "coupon=chunked", "--path", "inventory=chunked"});
  seed_config cfg{mock.url()};
  gateway_process gw(cfg.yaml());
  for (int i = 0; i < 3; ++i) {  // on fresh, then kept-alive connections
    auto res = http_get(gw.port(), offer_target("K1"));
    check_offer(res, "K1", {});
  }
  auto stats = mock.stats();
  CHECK(mock.path_counter(stats, "coupon", "requests") == 3);
  check_clean_exit(gw);
}

TEST_CASE("a downstream answering 500 is degraded, the others are not", "[degraded]") {
  auto took = expect_only_degraded("coupon", "fail");
  CHECK(took < 400ms);  // a 500 is a failure at once, no waiting for the deadline
}

TEST_CASE("a downstream answering non-JSON is degraded", "[degraded]") {
  auto took = expect_only_degraded("review-summary", "garbage");
  CHECK(took < 400ms);
}

TEST_CASE("a downstream answering JSON that is not an object is degraded", "[degraded]") {
  auto took = expect_only_degraded("logistics-eta", "notobject");
  CHECK(took < 400ms);
}

TEST_CASE("a downstream answering a body over 1 MiB is degraded", "[degraded]") {
  expect_only_degraded("recommendation", "big");
}

TEST_CASE("a downstream resetting the connection is degraded", "[degraded]") {
  auto took = expect_only_degraded("channel-price", "reset");
  CHECK(took < 400ms);
}

TEST_CASE("a downstream dripping one byte a second is cut at the deadline", "[degraded][deadline]") {
  auto took = expect_only_degraded("inventory", "drip", "500ms");
  CHECK(took >= 450ms);
  CHECK(took <= 900ms);  // deadline + a margin generous enough for ASan on two busy cores
}

TEST_CASE("a downstream that never sends its headers is cut at the deadline", "[degraded][deadline]") {
  auto took = expect_only_degraded("review-summary", "slowheaders", "500ms");
  CHECK(took >= 450ms);
  CHECK(took <= 900ms);  // deadline + a generous margin
}

TEST_CASE("a refused connection falls back at once", "[degraded]") {
  mock_downstream mock({"--delay", "20ms"});
  refused_port closed;
  seed_config cfg{mock.url()};
  cfg.connect_timeout = "500ms";  // a fallback waiting for this timer would take 500 ms
  cfg.url_override["coupon"] = "http://127.0.0.1:" + std::to_string(closed.port());
  gateway_process gw(cfg.yaml());

  auto start = steady_clock::now();
  auto res = http_get(gw.port(), offer_target("R1"));
  auto took = elapsed_since(start);

  check_offer(res, "R1", {"coupon"});
  CHECK(took < 600ms);  // deadline is 800 ms
  check_clean_exit(gw);
}

TEST_CASE(
    "a host name is resolved, and one that does not resolve falls back at once without stopping the start",
    "[degraded][dns]") {
  mock_downstream mock({"--delay", "20ms"});
  seed_config cfg{mock.url()};
  cfg.url_override["channel-price"] = "http://localhost:" + std::to_string(mock.port());
  cfg.url_override["coupon"] = "http://no-such-downstream.invalid:" + std::to_string(mock.port());
  gateway_process gw(cfg.yaml());

  for (int i = 0; i < 2; ++i) {  // the first call and a later one both fall back at once
    auto start = steady_clock::now();
    auto res = http_get(gw.port(), offer_target("N1"));
    auto took = elapsed_since(start);
    check_offer(res, "N1", {"coupon"});
    CHECK(took < 600ms);  // deadline is 800 ms
  }
  auto stats = mock.stats();
  CHECK(mock.path_counter(stats, "channel-price", "requests") == 2);  // reached through "localhost"
  CHECK(mock.path_counter(stats, "coupon", "requests") == 0);
  check_clean_exit(gw);
}

TEST_CASE("a connection attempt that gets no answer falls back at connect_timeout", "[degraded][deadline]") {
  mock_downstream mock({"--delay", "20ms"});
  silent_port silent;
  seed_config cfg{mock.url()};
  cfg.connect_timeout = "150ms";  // the deadline is 800 ms
  cfg.url_override["coupon"] = "http://127.0.0.1:" + std::to_string(silent.port());
  gateway_process gw(cfg.yaml());

  auto start = steady_clock::now();
  auto res = http_get(gw.port(), offer_target("T1"));
  auto took = elapsed_since(start);

  INFO("answered in " << took.count() << " ms");
  check_offer(res, "T1", {"coupon"});
  CHECK(took >= 100ms);
  CHECK(took < 450ms);  // connect_timeout + generous slack, well before the deadline
  check_clean_exit(gw);
}

TEST_CASE("a hung downstream: answered by the deadline, degraded, and its call cancelled",
          "[degraded][deadline]") {
  mock_downstream mock({"--delay", "20ms", "--path", "logistics-eta=hang"});
  seed_config cfg{mock.url()};
  cfg.deadline = "500ms";
  gateway_process gw(cfg.yaml());

  auto start = steady_clock::now();
  auto res = http_get(gw.port(), offer_target("H1"));
  auto took = elapsed_since(start);

  INFO("answered in " << took.count() << " ms");
  check_offer(res, "H1", {"logistics-eta"});
  CHECK(took >= 450ms);  // the hung call had until the deadline
  CHECK(took <= 900ms);  // deadline + a margin generous enough for ASan on two busy cores

  // The gateway closed the hung call's socket, so the mock sees it cancelled.
  auto stats =
      mock.wait_stats([&](const auto& s) { return mock.path_counter(s, "logistics-eta", "cancelled") >= 1; });
  INFO(stats.dump());
  CHECK(mock.path_counter(stats, "logistics-eta", "cancelled") == 1);
  CHECK(sum_over_calls(mock, stats, "cancelled") == 1);
  check_clean_exit(gw);
}

TEST_CASE("several failing downstreams are all listed in X-Degraded in call order", "[degraded]") {
  mock_downstream mock({"--delay", "20ms", "--path", "recommendation=fail", "--path", "inventory=garbage",
                        "--path", "coupon=hang"});
  seed_config cfg{mock.url()};
  cfg.deadline = "300ms";
  gateway_process gw(cfg.yaml());

  auto res = http_get(gw.port(), offer_target("M1"));
  check_offer(res, "M1", {"inventory", "coupon", "recommendation"});
  CHECK(res.header("x-degraded") ==
        "inventory;reason=error, coupon;reason=timeout, recommendation;reason=error");
}

TEST_CASE("all downstreams failing still gives 200 with six fallbacks", "[degraded]") {
  std::vector<std::string> args = {"--delay", "5ms"};
  for (const auto& call : seed_calls) args.insert(args.end(), {"--path", call + "=fail"});
  mock_downstream mock(args);
  gateway_process gw(seed_config{mock.url()}.yaml());

  check_offer(http_get(gw.port(), offer_target("ALL")), "ALL", seed_calls);
}

TEST_CASE("a per-call timeout shorter than the deadline cuts that call early", "[degraded][deadline]") {
  mock_downstream mock({"--delay", "20ms", "--path", "coupon=ok:600ms"});
  seed_config cfg{mock.url()};
  cfg.call_timeout["coupon"] = "150ms";
  gateway_process gw(cfg.yaml());

  auto start = steady_clock::now();
  auto res = http_get(gw.port(), offer_target("T1"));
  auto took = elapsed_since(start);

  check_offer(res, "T1", {"coupon"});
  CHECK(took >= 140ms);
  CHECK(took < 550ms);  // cut at 150 ms: neither the 600 ms answer nor the 800 ms deadline mattered
}

TEST_CASE("modes switched at runtime: a downstream recovers and fails again", "[degraded]") {
  mock_downstream mock({"--delay", "10ms"});
  gateway_process gw(seed_config{mock.url()}.yaml());
  http_connection conn(gw.port());

  check_offer(conn.get(offer_target("S1")), "S1");
  mock.set_mode("coupon", "fail");
  check_offer(conn.get(offer_target("S2")), "S2", {"coupon"});
  mock.set_mode("coupon", "ok", "10ms");
  check_offer(conn.get(offer_target("S3")), "S3");
  mock.set_mode("inventory", "reset");
  check_offer(conn.get(offer_target("S4")), "S4", {"inventory"});
  mock.set_mode("inventory", "ok", "10ms");
  // A reset connection must not poison the pool: the next call opens a fresh one.
  check_offer(conn.get(offer_target("S5")), "S5");
}

TEST_CASE("a required call answering 500 makes the answer 502", "[degraded][required]") {
  mock_downstream mock({"--delay", "20ms", "--path", "inventory=fail"});
  seed_config cfg{mock.url()};
  cfg.required_calls = {"inventory"};
  gateway_process gw(cfg.yaml());

  auto start = steady_clock::now();
  auto res = http_get(gw.port(), offer_target("Q1"));
  check_error(res, 502);
  CHECK(elapsed_since(start) < 400ms);
  check_clean_exit(gw);
}

// Once a required call has failed the answer is decided (502): the other calls are cancelled and the
// client is answered at once, not at the deadline.
TEST_CASE("a required call failing settles the answer at once while another call hangs",
          "[degraded][required][deadline]") {
  mock_downstream mock({"--delay", "20ms", "--path", "inventory=fail", "--path", "coupon=hang"});
  seed_config cfg{mock.url()};
  cfg.deadline = "3s";
  cfg.required_calls = {"inventory"};
  gateway_process gw(cfg.yaml());

  auto start = steady_clock::now();
  auto res = http_get(gw.port(), offer_target("Q4"));
  auto took = elapsed_since(start);
  INFO("answered in " << took.count() << " ms");
  check_error(res, 502);
  CHECK(took < 1500ms);  // the deadline is 3 s; failing at 20 ms must not wait for it
  auto stats =
      mock.wait_stats([&](const auto& s) { return mock.path_counter(s, "coupon", "cancelled") >= 1; });
  CHECK(mock.path_counter(stats, "coupon", "cancelled") == 1);
  check_clean_exit(gw);
}

TEST_CASE("a required call that hangs makes the answer 504 by the deadline",
          "[degraded][required][deadline]") {
  mock_downstream mock({"--delay", "20ms", "--path", "inventory=hang"});
  seed_config cfg{mock.url()};
  cfg.deadline = "500ms";
  cfg.required_calls = {"inventory"};
  gateway_process gw(cfg.yaml());

  auto start = steady_clock::now();
  auto res = http_get(gw.port(), offer_target("Q2"));
  auto took = elapsed_since(start);

  check_error(res, 504);
  CHECK(took >= 450ms);
  CHECK(took <= 900ms);  // deadline + a generous margin
  auto stats =
      mock.wait_stats([&](const auto& s) { return mock.path_counter(s, "inventory", "cancelled") >= 1; });
  CHECK(mock.path_counter(stats, "inventory", "cancelled") == 1);
  check_clean_exit(gw);
}

TEST_CASE("an optional call failing does not matter when the required ones succeed", "[degraded][required]") {
  mock_downstream mock({"--delay", "20ms", "--path", "recommendation=fail"});
  seed_config cfg{mock.url()};
  cfg.required_calls = {"inventory", "channel-price"};
  gateway_process gw(cfg.yaml());

  check_offer(http_get(gw.port(), offer_target("Q3")), "Q3", {"recommendation"});
}

TEST_CASE("a failed call is logged with its reason at most once a second per downstream and I/O thread",
          "[degraded][log]") {
  mock_downstream mock;
  seed_config cfg{mock.url()};
  cfg.threads = 1;
  gateway_process gw(cfg.yaml());
  mock.set_mode("coupon", "fail");
  http_connection conn(gw.port());
  for (int i = 0; i < 20; ++i) {
    const auto sku = "G" + std::to_string(i);
    check_offer(conn.get(offer_target(sku)), sku, {"coupon"});
  }
  const std::string line =
      "call 'coupon' of route /api/offer/aggregate to downstream 'coupon' failed: status_5xx";
  std::string log;
  for (int i = 0; i < 40 && log.find(line) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    log = gw.process().stderr_text();
  }
  INFO(log);
  CHECK(log.find(line) != std::string::npos);
  CHECK(log.find("status 500") != std::string::npos);
  std::size_t lines = 0;
  for (auto at = log.find(line); at != std::string::npos; at = log.find(line, at + 1)) ++lines;
  CHECK(lines <= 2);  // 20 failures within about a second: one line, two if the second turned
  // After the pause, the next line tells how many were left out.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  check_offer(conn.get(offer_target("G99")), "G99", {"coupon"});
  for (int i = 0;
       i < 40 && gw.process().stderr_text().find("not logged in the last second") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(gw.process().stderr_text().find("more failed calls to it not logged in the last second") !=
        std::string::npos);
}
