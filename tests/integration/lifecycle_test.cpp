// The gateway under pressure and at its end: load shedding beyond max_inflight and max_connections, a
// graceful drain under continuous keep-alive load, a restart without a gap (two processes from one file
// sharing the public and admin ports), and the access log (including a stdout nobody reads).
// Slow request heads (header_timeout) and oversized ones (431) are covered in limits_test.cpp and
// protocol_test.cpp.

#include "tests/integration/metric_scrape.hpp"
#include "tests/support/load_clients.hpp"
#include "tests/support/loopback_socket.hpp"
#include "tests/support/offer_checks.hpp"
#include "tests/support/prometheus_text.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

constexpr int drain_clients = 200;

// An access log line on the gateway's stdout containing `needle`.
std::string access_line(gateway_process& gw, const std::string& needle) {
  auto found = gw.process().wait_for_line(std::regex("^.*" + needle + ".*$"), 5s);
  INFO("stdout so far:\n" << gw.process().stdout_text().substr(0, 4000));
  REQUIRE(found);
  return (*found)[0];
}

std::string with_log(const seed_config& cfg, const std::string& format) {
  return cfg.yaml() + "log:\n  access: true\n  format: " + format + "\n";
}

// One configuration text for both processes of a restart, as a VM or systemd restart has: the public and
// the admin listener on fixed ports (`ports`: public, admin), which both processes share (SO_REUSEPORT).
std::string restart_yaml(const seed_config& cfg, std::pair<std::uint16_t, std::uint16_t> ports,
                         const std::string& drain_delay) {
  auto yaml = cfg.yaml() + "shutdown:\n  drain_delay: " + drain_delay + "\n  timeout: 10s\n";
  const std::string any_port = "listen: 127.0.0.1:0\n  threads";
  const auto at = yaml.find(any_port);
  REQUIRE(at != std::string::npos);
  yaml.replace(at, any_port.size(), "listen: 127.0.0.1:" + std::to_string(ports.first) + "\n  threads");
  return yaml + "admin:\n  listen: 127.0.0.1:" + std::to_string(ports.second) + "\n";
}

std::pair<std::uint16_t, std::uint16_t> restart_ports() {
  const auto port = free_loopback_port();
  auto admin_port = free_loopback_port();
  while (admin_port == port) admin_port = free_loopback_port();
  return {port, admin_port};
}

}  // namespace

TEST_CASE("requests beyond max_inflight are shed at once with 503 and no downstream call", "[shed]") {
  mock_downstream mock(all_hang_args("5ms"));
  seed_config cfg{mock.url()};
  cfg.deadline = "3s";
  cfg.limits = "  max_inflight: 2\n";
  gateway_process gw(cfg.yaml());

  http_connection first(gw.port()), second(gw.port());
  first.send_request("GET", offer_target("S1"));
  second.send_request("GET", offer_target("S2"));
  auto stats = mock.wait_stats([&](const auto& s) { return sum_over_calls(mock, s, "requests") == 12; });
  REQUIRE(sum_over_calls(mock, stats, "requests") == 12);

  http_connection third(gw.port());
  const auto start = steady_clock::now();
  auto shed = third.get(offer_target("S3"), {}, 3s);
  const auto took = elapsed_since(start);
  INFO("answered in " << took.count() << " ms");
  check_error(shed, 503);
  CHECK(shed.header("retry-after").value_or("") == "1");
  CHECK(shed.json().value("error", "").find("overloaded") == 0);
  CHECK(took < 500ms);  // the deadline is 3 s: the answer did not wait for anything
  CHECK(sum_over_calls(mock, mock.stats(), "requests") == 12);

  // Once the two leave (their calls are cancelled), the same kept-alive connection is served again.
  first.close();
  second.close();
  for (const auto& call : seed_calls) mock.set_mode(call, "ok", "5ms");
  http_response res;
  for (const auto until = steady_clock::now() + 3s; steady_clock::now() < until;) {
    res = third.get(offer_target("S4"), {}, 3s);
    if (res.status != 503) break;
    std::this_thread::sleep_for(20ms);
  }
  check_offer(res, "S4");
  check_clean_exit(gw);
}

TEST_CASE("connections beyond max_connections are shed with 503, Retry-After and a close", "[shed]") {
  mock_downstream mock({"--delay", "5ms"});
  seed_config cfg{mock.url()};
  cfg.limits = "  max_connections: 3\n";
  gateway_process gw(cfg.yaml());

  std::vector<http_connection> held;
  for (int i = 0; i < 3; ++i) {
    held.emplace_back(gw.port());
    check_error(held.back().get("/warm-up"), 404);  // accepted and counted
  }
  http_connection extra(gw.port());
  std::string received;
  CHECK(extra.wait_closed_by_peer(3s, &received));
  auto shed = parse_raw_response(received);
  INFO("received: " << received);
  CHECK(shed.complete);
  CHECK(shed.problem.empty());
  CHECK(shed.status == 503);
  CHECK(shed.close);
  CHECK(shed.head.find("\r\nRetry-After: 1\r\n") != std::string::npos);
  CHECK(nlohmann::json::accept(shed.body));

  // The held connections are unaffected; closing one makes room for a new one.
  check_error(held.front().get("/warm-up"), 404);
  held.pop_back();
  http_response res;
  for (const auto until = steady_clock::now() + 3s; steady_clock::now() < until;) {
    res = http_get(gw.port(), offer_target("M1"));
    if (res.status != 503) break;
    std::this_thread::sleep_for(20ms);
  }
  check_offer(res, "M1");
  check_clean_exit(gw);
}

TEST_CASE("drain under continuous keep-alive load: every accepted request completes, then exit 0",
          "[drain][load]") {
  mock_downstream mock({"--delay", "150ms", "--threads", "2"});
  seed_config cfg{mock.url()};
  cfg.deadline = "2s";
  gateway_process gw(cfg.yaml() + "shutdown:\n  drain_delay: 1s\n  timeout: 10s\n");

  drain_run run(gw.port(), drain_clients);
  const auto start = steady_clock::now();
  steady_clock::time_point signalled_at;
  std::optional<milliseconds> exited_after;
  for (;;) {
    const auto now = steady_clock::now();
    if (!run.signalled && run.all_answered(2) && now - start >= 1s) {
      run.inflight_at_signal = run.in_flight();
      REQUIRE(::kill(gw.process().pid(), SIGTERM) == 0);
      run.signalled = true;
      signalled_at = now;
    }
    if (!run.signalled && now - start > 30s) FAIL("the clients were not all served twice within 30 s");
    if (run.signalled && !exited_after && !gw.running())
      exited_after = std::chrono::duration_cast<milliseconds>(now - signalled_at);
    if ((run.all_done() && exited_after) || (run.signalled && now - signalled_at > 15s)) break;
    run.poll_once(10ms);
  }
  run.close_all("still open 15 s after SIGTERM");

  auto status = gw.process().wait_exit(5s);
  std::string failures;
  for (std::size_t i = 0; i < run.failures.size() && i < 20; ++i) failures += run.failures[i] + "\n";
  WARN("drain: " << drain_clients << " clients; " << run.inflight_at_signal
                 << " requests in flight at SIGTERM; " << run.answered_before << " answered before, "
                 << run.answered_during << " during the drain; " << run.not_accepted
                 << " not accepted (closed before any byte); " << run.refused << " reconnects refused; "
                 << run.failures.size() << " failures; exit "
                 << (exited_after ? std::to_string(exited_after->count()) + " ms" : std::string("not seen"))
                 << " after SIGTERM");
  INFO(failures << "gateway stderr (tail):\n"
                << [&] {
                     auto err = gw.process().stderr_text();
                     return err.size() > 3000 ? err.substr(err.size() - 3000) : err;
                   }());
  CHECK(run.failures.empty());
  // Alone on its port, it takes new connections up to its close: no hand-off (port_handoff.hpp).
  CHECK(gw.process().stderr_text().find("new connections go to it") == std::string::npos);
  CHECK(run.inflight_at_signal > 0);
  CHECK(run.answered_during > 0);
  CHECK(run.refused == drain_clients);  // every client ends on a refused connection, none on a failure
  REQUIRE(status);
  CHECK(status->exited);
  CHECK(status->code == 0);
  REQUIRE(exited_after);
  CHECK(*exited_after < 1s + 2s + 3s);  // drain_delay + the longest deadline + margin
}

TEST_CASE("drain: shutdown.timeout cancels the requests still running and the gateway exits 0", "[drain]") {
  mock_downstream mock(all_hang_args("5ms"));
  seed_config cfg{mock.url()};
  cfg.deadline = "30s";
  gateway_process gw(cfg.yaml() + "shutdown:\n  drain_delay: 0s\n  timeout: 1s\n");
  std::vector<http_connection> conns;
  for (int i = 0; i < 3; ++i) {
    conns.emplace_back(gw.port());
    conns.back().send_request("GET", offer_target(numbered_sku("T", i)));
  }
  auto stats = mock.wait_stats([&](const auto& s) { return sum_over_calls(mock, s, "requests") == 18; });
  REQUIRE(sum_over_calls(mock, stats, "requests") == 18);

  const auto start = steady_clock::now();
  auto status = gw.process().stop(SIGTERM, 5s);
  const auto took = elapsed_since(start);
  INFO("exited " << took.count() << " ms after SIGTERM");
  REQUIRE(status);
  CHECK(status->exited);
  CHECK(status->code == 0);
  CHECK(took >= 900ms);
  CHECK(took < 3000ms);
  stats = mock.wait_stats([&](const auto& s) { return sum_over_calls(mock, s, "cancelled") == 18; });
  CHECK(sum_over_calls(mock, stats, "cancelled") == 18);
  for (auto& conn : conns) CHECK(conn.wait_closed_by_peer(1s));
}

TEST_CASE("drain: a connection accepted just before the listener closed is served its first request",
          "[drain][restart]") {
  // In a restart the client cannot know the old process is draining: a connection it opened just before
  // the listener closed is owed its first request (a kept-alive one, which has had its answers, is not).
  mock_downstream mock({"--delay", "5ms"});
  seed_config cfg{mock.url()};
  gateway_process gw(cfg.yaml() + "shutdown:\n  drain_delay: 0s\n  timeout: 5s\n");
  http_connection kept(gw.port());
  check_offer(kept.get(offer_target("K1")), "K1");
  http_connection fresh(gw.port());
  std::this_thread::sleep_for(200ms);  // accepted by now; no request yet
  REQUIRE(::kill(gw.process().pid(), SIGTERM) == 0);
  CHECK(kept.wait_closed_by_peer(2s));  // the drain has closed the connections waiting for another request
  const auto r = fresh.get(offer_target("F1"));
  check_offer(r, "F1");
  CHECK(r.header("Connection").value_or("") == "close");
  const auto status = gw.process().wait_exit(5s);
  REQUIRE(status);
  CHECK(status->exited);
  CHECK(status->code == 0);
}

TEST_CASE("drain: a second signal stops the gateway at once", "[drain]") {
  mock_downstream mock(all_hang_args("5ms"));
  seed_config cfg{mock.url()};
  cfg.deadline = "30s";
  gateway_process gw(cfg.yaml() + "shutdown:\n  drain_delay: 10s\n  timeout: 30s\n");
  http_connection conn(gw.port());
  conn.send_request("GET", offer_target("T9"));
  mock.wait_stats([&](const auto& s) { return sum_over_calls(mock, s, "requests") == 6; });

  REQUIRE(::kill(gw.process().pid(), SIGTERM) == 0);
  http_response ready;
  for (const auto until = steady_clock::now() + 2s; steady_clock::now() < until;) {
    ready = http_get(gw.admin_port(), "/readyz");
    if (ready.status == 503) break;
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(ready.status == 503);  // the drain has begun
  const auto start = steady_clock::now();
  auto status = gw.process().stop(SIGTERM, 5s);
  const auto took = elapsed_since(start);
  INFO("exited " << took.count() << " ms after the second SIGTERM");
  REQUIRE(status);
  CHECK(status->exited);
  CHECK(status->code == 0);
  CHECK(took < 2000ms);
  CHECK(conn.wait_closed_by_peer(1s));
}

TEST_CASE("access log: one JSON line per request with id, route, status, duration, degraded, bytes, client",
          "[access]") {
  mock_downstream mock({"--delay", "5ms"});
  seed_config cfg{mock.url()};
  gateway_process gw(with_log(cfg, "json"));
  http_connection conn(gw.port());
  const std::string client = "127.0.0.1:" + std::to_string(local_port(conn.fd()));

  auto check_line = [&](const std::string& id, const http_response& res, const std::string& route,
                        const nlohmann::json& degraded) {
    const auto line = access_line(gw, "\"" + id + "\"");
    INFO(line);
    const auto j = nlohmann::json::parse(line, nullptr, false);
    REQUIRE(j.is_object());
    CHECK(std::regex_match(j.value("time", ""), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")));
    CHECK(j["request_id"] == id);
    CHECK(j["method"] == "GET");
    CHECK(j["route"] == route);
    CHECK(j["status"] == res.status);
    CHECK(j["duration_ms"].is_number());
    CHECK(j.value("duration_ms", -1.0) >= 0);
    CHECK(j["degraded"] == degraded);
    CHECK(j["bytes"] == res.body.size());
    CHECK(j["client"] == client);
    CHECK_FALSE(j.contains("proxy"));
    return j;
  };
  // Each call of the route, in order, with its outcome, status and latency.
  auto check_calls = [](const nlohmann::json& j, const std::string& failing) {
    REQUIRE(j["calls"].is_array());
    REQUIRE(j["calls"].size() == seed_calls.size());
    for (std::size_t i = 0; i < seed_calls.size(); ++i) {
      const auto& c = j["calls"][i];
      INFO(c.dump());
      CHECK(c["name"] == seed_calls[i]);
      CHECK(c["outcome"] == (seed_calls[i] == failing ? "status_5xx" : "ok"));
      CHECK(c["status"] == (seed_calls[i] == failing ? 500 : 200));
      CHECK(c.value("ms", -1.0) >= 0);
      CHECK(c.value("ms", 1e9) <= j.value("duration_ms", 0.0));
    }
  };

  // A secret query value is redacted from the path; the user agent and the caller's trace id are kept.
  const std::string trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  auto ok = conn.get(offer_target("L1") + "&api_key=s3cr3t-value",
                     {{"X-Request-Id", "test-123"},
                      {"User-Agent", "probe/1.0 (\"quoted\")"},
                      {"traceparent", "00-" + trace_id + "-00f067aa0ba902b7-01"}});
  check_offer(ok, "L1");
  const auto first = check_line("test-123", ok, "/api/offer/aggregate", nlohmann::json::array());
  CHECK(first["path"] == offer_target("L1") + "&api_key=REDACTED");
  CHECK(first["user_agent"] == "probe/1.0 (\"quoted\")");
  CHECK(first["trace_id"] == trace_id);
  check_calls(first, "");

  mock.set_mode("coupon", "fail");
  auto degraded = conn.get(offer_target("L2"), {{"X-Request-Id", "test-456"}});
  check_offer(degraded, "L2", {"coupon"});
  const auto second =
      check_line("test-456", degraded, "/api/offer/aggregate", nlohmann::json::array({"coupon"}));
  CHECK(second["path"] == offer_target("L2"));
  CHECK(second["user_agent"] == "");
  CHECK_FALSE(second.contains("trace_id"));
  check_calls(second, "coupon");

  auto unmatched = conn.get("/nowhere?token=abc", {{"X-Request-Id", "test-789"}});
  check_error(unmatched, 404);
  const auto third = check_line("test-789", unmatched, "unmatched", nlohmann::json::array());
  CHECK(third["path"] == "/nowhere?token=REDACTED");
  CHECK_FALSE(third.contains("calls"));

  // A client that leaves mid-request is logged with 499.
  for (const auto& call : seed_calls) mock.set_mode(call, "hang");
  const auto before = sum_over_calls(mock, mock.stats(), "requests");
  {
    http_connection leaving(gw.port());
    leaving.send_request("GET", offer_target("L3"), {{"X-Request-Id", "test-gone"}});
    mock.wait_stats([&](const auto& s) { return sum_over_calls(mock, s, "requests") == before + 6; });
  }
  const auto gone = nlohmann::json::parse(access_line(gw, "\"test-gone\""), nullptr, false);
  CHECK(gone.value("status", 0) == 499);
  check_clean_exit(gw);
}

TEST_CASE("access log: text format", "[access]") {
  mock_downstream mock({"--delay", "5ms"});
  seed_config cfg{mock.url()};
  gateway_process gw(with_log(cfg, "text"));
  http_connection conn(gw.port());
  const auto port = std::to_string(local_port(conn.fd()));

  auto ok = conn.get(offer_target("T1"), {{"X-Request-Id", "txt-1"}});
  check_offer(ok, "T1");
  mock.set_mode("coupon", "fail");
  auto degraded = conn.get(offer_target("T2"), {{"X-Request-Id", "txt-2"}});
  check_offer(degraded, "T2", {"coupon"});

  const std::string time = R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)";
  const std::string tail = R"( [0-9]+\.[0-9]{3}ms degraded=)";
  // name:outcome:status:latency for each call
  auto calls = [](const std::string& failing) {
    std::string c = " calls=";
    for (const auto& name : seed_calls) {
      if (c.size() > 7) c += ",";
      c += name + (name == failing ? ":status_5xx:500:" : ":ok:200:") + R"([0-9]+\.[0-9]{3}ms)";
    }
    return c;
  };
  const auto first = access_line(gw, " txt-1 ");
  INFO(first);
  CHECK(std::regex_match(
      first, std::regex("^" + time + " txt-1 GET /api/offer/aggregate 200" + tail +
                        "- bytes=" + std::to_string(ok.body.size()) + R"( client=127\.0\.0\.1:)" + port +
                        R"( path=/api/offer/aggregate\?sku=T1 ua="" trace=-)" + calls("") + "$")));
  const auto second = access_line(gw, " txt-2 ");
  INFO(second);
  CHECK(std::regex_match(
      second, std::regex("^" + time + " txt-2 GET /api/offer/aggregate 200" + tail + "coupon bytes=" +
                         std::to_string(degraded.body.size()) + R"( client=127\.0\.0\.1:)" + port +
                         R"( path=/api/offer/aggregate\?sku=T2 ua="" trace=-)" + calls("coupon") + "$")));
  check_clean_exit(gw);
}

TEST_CASE("access log: the client from X-Forwarded-For only when the peer is a trusted proxy", "[access]") {
  mock_downstream mock({"--delay", "1ms"});
  seed_config cfg{mock.url()};
  const auto log_with = [&](const std::string& trusted) {
    auto y = with_log(cfg, "json");
    if (!trusted.empty()) y.insert(y.find("  threads:"), "  trusted_proxies: " + trusted + "\n");
    return y;
  };
  const std::string forwarded = "198.51.100.7, 203.0.113.9, 10.1.2.3";
  auto line_of = [&](gateway_process& gw, const std::string& id) {
    http_connection conn(gw.port());
    auto res = conn.get(offer_target("X1"), {{"X-Request-Id", id}, {"X-Forwarded-For", forwarded}});
    CHECK(res.status == 200);
    const auto peer = "127.0.0.1:" + std::to_string(local_port(conn.fd()));
    auto j = nlohmann::json::parse(access_line(gw, "\"" + id + "\""), nullptr, false);
    REQUIRE(j.is_object());
    return std::pair{j, peer};
  };
  SECTION("an untrusted peer's X-Forwarded-For is ignored") {
    gateway_process gw(log_with(""));
    const auto [j, peer] = line_of(gw, "xff-untrusted");
    CHECK(j["client"] == peer);
    CHECK_FALSE(j.contains("proxy"));
  }
  SECTION("a trusted peer: the rightmost address that is not one of ours") {
    gateway_process gw(log_with("[127.0.0.1]"));
    const auto [j, peer] = line_of(gw, "xff-one");
    CHECK(j["client"] == "10.1.2.3");
    CHECK(j["proxy"] == peer);
  }
  SECTION("trusted proxies in the chain are skipped") {
    gateway_process gw(log_with("[127.0.0.1, 10.0.0.0/8]"));
    const auto [j, peer] = line_of(gw, "xff-chain");
    CHECK(j["client"] == "203.0.113.9");
    CHECK(j["proxy"] == peer);
  }
}

TEST_CASE("access log: the listeners' start-up lines are log lines of the configured format", "[access]") {
  mock_downstream mock({"--delay", "1ms"});
  seed_config cfg{mock.url()};
  SECTION("json") {
    gateway_process gw(with_log(cfg, "json"));
    const auto out = gw.process().stdout_text();
    std::istringstream lines(out);
    std::string line;
    int listeners = 0;
    while (std::getline(lines, line)) {
      INFO(line);
      const auto j = nlohmann::json::parse(line, nullptr, false);
      REQUIRE(j.is_object());  // no plain text in the JSON stream
      if (j.value("message", "").find("listening on") == std::string::npos) continue;
      ++listeners;
      CHECK(j["level"] == "info");
      CHECK(std::regex_match(j.value("time", ""), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")));
    }
    CHECK(listeners == 2);
    CHECK(out.find("\"message\":\"gateway listening on 127.0.0.1:" + std::to_string(gw.port()) + "\"") !=
          std::string::npos);
    CHECK(out.find("\"message\":\"admin listening on 127.0.0.1:" + std::to_string(gw.admin_port()) + "\"") !=
          std::string::npos);
  }
  SECTION("text") {
    gateway_process gw(with_log(cfg, "text"));
    CHECK(std::regex_search(
        gw.process().stdout_text(),
        std::regex(R"(^\[\d{4}-\d\d-\d\dT[0-9:.]+Z\] \[info\] gateway listening on 127\.0\.0\.1:)" +
                   std::to_string(gw.port()) + "\n")));
  }
}

TEST_CASE("access log: every line of many concurrent requests arrives whole", "[access]") {
  mock_downstream mock({"--delay", "0ms", "--threads", "2"});
  seed_config cfg{mock.url()};
  gateway_process gw(with_log(cfg, "json"));
  constexpr int threads = 4;
  constexpr int per_thread = 300;
  // The test reads the gateway's stdout (a pipe of 64 KiB) all along, as a log collector would.
  std::atomic<bool> done{false};
  threaded_load_result load;
  std::thread clients([&] {
    load = run_threaded_load(gw.port(), threads, per_thread, "W");
    done = true;
  });
  const std::regex nothing("^never$");
  while (!done) gw.process().wait_for_line(nothing, 50ms);
  clients.join();
  for (const auto& e : load.errors) CHECK(e.empty());
  REQUIRE(load.answered == threads * per_thread);
  // The batches reach stdout within the flush interval: wait for the last ones, then count.
  std::size_t lines = 0;
  for (const auto until = steady_clock::now() + 5s; steady_clock::now() < until;) {
    gw.process().wait_for_line(nothing, 50ms);
    const auto out = gw.process().stdout_text();
    lines = 0;
    std::istringstream in(out);
    std::string line;
    bool whole = true;
    while (std::getline(in, line)) {
      if (line.find("\"request_id\"") == std::string::npos) continue;
      whole = whole && nlohmann::json::parse(line, nullptr, false).is_object();
      ++lines;
    }
    REQUIRE(whole);
    if (lines >= static_cast<std::size_t>(threads * per_thread)) break;
  }
  CHECK(lines == static_cast<std::size_t>(threads * per_thread));
  CHECK(total(parse_exposition(http_get(gw.admin_port(), "/metrics").body),
              "gateway_access_log_dropped_total") == 0);
  check_clean_exit(gw);
}

TEST_CASE("access log: the gateway keeps answering promptly when nobody reads its stdout", "[access]") {
  mock_downstream mock({"--delay", "0ms", "--threads", "2"});
  seed_config cfg{mock.url()};
  gateway_process gw(with_log(cfg, "json"));  // nothing reads its stdout from here on: the pipe fills

  constexpr int threads = 6;
  constexpr int per_thread = 500;
  const auto load = run_threaded_load(gw.port(), threads, per_thread, "P");
  for (const auto& e : load.errors) CHECK(e.empty());
  CHECK(load.answered == threads * per_thread);
  INFO("slowest answer: " << load.slowest_ms << " ms");
  CHECK(load.slowest_ms < 2000);

  // The lines that did not fit are dropped and counted.
  double dropped = 0;
  for (const auto until = steady_clock::now() + 5s; dropped == 0 && steady_clock::now() < until;) {
    dropped = total(parse_exposition(http_get(gw.admin_port(), "/metrics").body),
                    "gateway_access_log_dropped_total");
    if (dropped == 0) std::this_thread::sleep_for(50ms);
  }
  WARN("access log lines dropped while stdout was full: " << dropped);
  CHECK(dropped > 0);
  check_clean_exit(gw);
}

TEST_CASE("restart without a gap: a second gateway binds the port while the first drains, nothing fails",
          "[drain][restart]") {
  mock_downstream mock({"--threads", "2"});
  const auto [port, admin_port] = restart_ports();
  const auto yaml = restart_yaml(seed_config{mock.url()}, {port, admin_port}, "1s");
  std::optional<gateway_process> first(std::in_place, yaml);
  REQUIRE(first->admin_port() == admin_port);

  // Clients that open a new connection for every request, all through the restart.
  std::atomic<bool> stop{false};
  std::atomic<int> answered{0};
  std::mutex failures_lock;
  std::vector<std::string> failures;
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; !stop; ++i) {
        try {
          const auto sku = "R" + std::to_string(c) + "x" + std::to_string(i);
          const auto r = http_get(port, offer_target(sku), {}, 5000ms);
          if (r.status == 200) {
            ++answered;
            continue;
          }
          const std::lock_guard lock(failures_lock);
          failures.push_back("status " + std::to_string(r.status));
        } catch (const std::exception& e) {
          const std::lock_guard lock(failures_lock);
          failures.push_back(e.what());
        }
      }
    });
  }
  std::this_thread::sleep_for(300ms);
  std::optional<gateway_process> second;  // binds both ports while the first still listens on them
  std::string refused;
  try {
    second.emplace(yaml);
  } catch (const std::exception& e) {
    refused = e.what();
  }
  if (!second) {
    stop = true;
    for (auto& t : clients) t.join();
    FAIL("the second gateway did not start: " << refused);
  }
  REQUIRE(second->admin_port() == admin_port);
  // Probes of the shared admin port (a new connection each), from now until the end: whichever process
  // takes one, it must be answered.
  std::atomic<int> phase{0};  // 0: both run, 1: the first drains, 2: the first has exited
  std::array<std::vector<int>, 3> probes;
  std::thread prober([&] {
    while (!stop) {
      const int before = phase;
      int answer = -1;
      try {
        answer = http_get(admin_port, "/readyz", {}, 2000ms).status;
      } catch (const std::exception&) {
      }
      // A probe sent as the drain began may have met it: it counts with the drain.
      const int counted = before == 0 ? std::min(phase.load(), 1) : before;
      probes[static_cast<std::size_t>(counted)].push_back(answer);
      std::this_thread::sleep_for(10ms);
    }
  });
  std::this_thread::sleep_for(300ms);
  const int before_restart = answered;
  phase = 1;
  REQUIRE(::kill(first->process().pid(), SIGTERM) == 0);
  const auto status = first->process().wait_exit(15s);
  phase = 2;
  std::this_thread::sleep_for(500ms);  // the second serves alone now
  stop = true;
  for (auto& t : clients) t.join();
  prober.join();

  std::string listed;
  for (std::size_t i = 0; i < failures.size() && i < 10; ++i) listed += failures[i] + "\n";
  INFO(failures.size() << " failures:\n" << listed);
  CHECK(failures.empty());
  CHECK(before_restart > 0);
  CHECK(answered > before_restart);
  REQUIRE(status);
  CHECK(status->exited);
  CHECK(status->code == 0);
  // The first saw the second on both ports and stopped taking handshakes before it closed them.
  const auto first_log = first->process().stderr_text();
  CHECK(first_log.find("another process listens on the port too") != std::string::npos);
  CHECK(first_log.find("another process listens on the admin port too") != std::string::npos);
  CHECK(metric(*second, "http_server_request_duration_seconds_count",
               {{"http_response_status_code", "200"}}) > 0);

  // Both ready: every probe 200. While the first drains, a probe it takes answers 503 (draining) until,
  // shortly before the end of drain_delay, it stops taking new handshakes and then closes its listeners;
  // no probe is lost in between (port_handoff.hpp). After it has exited, the second answers.
  const auto count = [](const std::vector<int>& v, int status_code) {
    return std::count(v.begin(), v.end(), status_code);
  };
  INFO("probes while both run: " << probes[0].size() << ", while the first drains: " << probes[1].size()
                                 << " (503: " << count(probes[1], 503) << "), after: " << probes[2].size());
  CHECK(!probes[0].empty());
  CHECK(count(probes[0], 200) == static_cast<long>(probes[0].size()));
  CHECK(count(probes[1], 200) + count(probes[1], 503) == static_cast<long>(probes[1].size()));
  CHECK(count(probes[2], 200) == static_cast<long>(probes[2].size()));
  for (int i = 0; i < 10; ++i) {
    INFO("probe " << i << " after the first exited");
    CHECK(http_get(admin_port, "/readyz").status == 200);
  }
  CHECK(http_get(admin_port, "/livez").status == 200);
}

TEST_CASE(
    "restart without a gap: once the draining gateway closes its listener, new admin connections reach "
    "the new one",
    "[drain][restart][admin]") {
  mock_downstream mock({"--delay", "4s"});
  seed_config cfg{mock.url()};
  cfg.deadline = "8s";
  const auto [port, admin_port] = restart_ports();
  const auto yaml = restart_yaml(cfg, {port, admin_port}, "2s");
  std::optional<gateway_process> first(std::in_place, yaml);
  // A request the first gateway alone takes (no other listens yet); it keeps the first alive for 4 s.
  http_connection slow(port);
  slow.send_request("GET", offer_target("S1"));
  std::this_thread::sleep_for(100ms);
  gateway_process second(yaml);
  REQUIRE(::kill(first->process().pid(), SIGTERM) == 0);

  // While it drains, the first answers the admin connections it takes with 503; keep one of them.
  std::optional<http_connection> kept;
  for (int i = 0; i < 50 && !kept; ++i) {
    http_connection c(admin_port);
    if (c.get("/readyz").status == 503) kept.emplace(std::move(c));
  }
  REQUIRE(kept);
  // Its listeners close at the end of drain_delay; the request keeps it running.
  const auto closed = [&] {
    return first->process().stderr_text().find("drain: listener closed") != std::string::npos;
  };
  for (const auto until = steady_clock::now() + 5s; !closed() && steady_clock::now() < until;)
    std::this_thread::sleep_for(20ms);
  REQUIRE(closed());
  REQUIRE(first->running());
  for (int i = 0; i < 40; ++i) {
    INFO("probe " << i);
    CHECK(http_get(admin_port, "/readyz").status == 200);
  }
  // The connection it had still gets its answer, and is closed after it.
  const auto last = kept->get("/readyz");
  CHECK(last.status == 503);
  CHECK(last.header("connection").value_or("") == "close");
  check_offer(slow.read_response(5s), "S1");
  const auto status = first->process().wait_exit(10s);
  REQUIRE(status);
  CHECK(status->code == 0);
  CHECK(http_get(admin_port, "/readyz").status == 200);
}
