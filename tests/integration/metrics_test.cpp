// GET /metrics on the admin listener: the text is valid Prometheus exposition (version 0.0.4), every
// documented family is there with its type, and the numbers move as they should after known traffic.

#include "tests/support/offer_checks.hpp"
#include "tests/support/prometheus_text.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

// GET /metrics: checks that it answers 200 with valid exposition text.
exposition scrape(gateway_process& gw) {
  auto res = http_get(gw.admin_port(), "/metrics");
  INFO(res.body.substr(0, 3000));
  REQUIRE(res.status == 200);
  auto e = parse_exposition(res.body);
  INFO(text_of(e.problems));
  CHECK(e.problems.empty());
  return e;
}

// Scrapes until `done` holds (metrics recorded just after a response was written may lag it).
exposition scrape_until(gateway_process& gw, const std::function<bool(const exposition&)>& done,
                        milliseconds timeout = 3s) {
  const auto deadline = steady_clock::now() + timeout;
  for (;;) {
    auto e = scrape(gw);
    if (done(e) || steady_clock::now() >= deadline) return e;
    std::this_thread::sleep_for(20ms);
  }
}

const std::string route = "/api/offer/aggregate";
const std::string request_count = "http_server_request_duration_seconds_count";

label_map request_labels(const std::string& status) {
  return {{"http_route", route}, {"http_request_method", "GET"}, {"http_response_status_code", status}};
}

}  // namespace

TEST_CASE("the /metrics text reader used by these tests rejects malformed exposition", "[metrics]") {
  const std::string good =
      "# HELP a_total Things.\n# TYPE a_total counter\na_total{x=\"q\\\"\\\\\\n\"} 3\n"
      "# TYPE h histogram\nh_bucket{le=\"0.1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 0.5\nh_count 2\n"
      "# TYPE g gauge\ng NaN\n";
  CHECK(parse_exposition(good).problems.empty());
  for (const std::string bad : {
           "# TYPE 1a counter\n1a 1\n",                                 // name
           "# TYPE a gauge\na{x=\"\\q\"} 1\n",                          // escape
           "# TYPE a gauge\na{x=\"1} 1\n",                              // unterminated
           "# TYPE a gauge\na 1,5\n",                                   // number
           "# TYPE a gauge\na 1 1700000000\n",                          // timestamp
           "a 1\n",                                                     // no TYPE
           "# TYPE a gauge\n# TYPE a gauge\na 1\n",                     // TYPE twice
           "# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na{x=\"y\"} 1\n",  // not grouped
           "# TYPE a summary\na 1\n",                                   // type
           "# TYPE a counter\na -1\n",                                  // counter
           "# TYPE a gauge\na 1\na 2\n",                                // series twice
           "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
           "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n",
           "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",  // no +Inf
       }) {
    INFO(bad);
    CHECK_FALSE(parse_exposition(bad).problems.empty());
  }
}

TEST_CASE("/metrics is valid Prometheus text with every documented family", "[metrics]") {
  mock_downstream mock({"--delay", "5ms"});
  seed_config cfg{mock.url()};
  auto epoch_seconds = [] {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  };
  const auto started_after = epoch_seconds();
  gateway_process gw(cfg.yaml());
  const auto started_before = epoch_seconds();
  check_offer(http_get(gw.port(), offer_target("M1")), "M1");
  check_error(http_get(gw.port(), "/nowhere"), 404);

  auto res = http_get(gw.admin_port(), "/metrics");
  REQUIRE(res.status == 200);
  CHECK(res.header("content-type").value_or("").find("text/plain; version=0.0.4") == 0);
  // Both I/O threads have noted their heartbeat lag at least once, and the client connections are gone.
  auto e = scrape_until(gw, [](const exposition& x) {
    return total(x, "gateway_event_loop_lag_seconds_count", {{"io_thread", "0"}}) > 0 &&
           total(x, "gateway_event_loop_lag_seconds_count", {{"io_thread", "1"}}) > 0 &&
           total(x, "gateway_open_connections") == 0;
  });
  const std::map<std::string, std::string> families = {
      {"http_server_request_duration_seconds", "histogram"},
      {"http_server_active_requests", "gauge"},
      {"http_client_request_duration_seconds", "histogram"},
      {"gateway_downstream_calls_total", "counter"},
      {"gateway_degraded_responses_total", "counter"},
      {"gateway_fallbacks_total", "counter"},
      {"gateway_client_disconnects_total", "counter"},
      {"gateway_shed_requests_total", "counter"},
      {"gateway_coroutines_active", "gauge"},
      {"gateway_event_loop_lag_seconds", "histogram"},
      {"gateway_open_connections", "gauge"},
      {"gateway_access_log_dropped_total", "counter"},
      {"process_cpu_seconds_total", "counter"},
      {"process_resident_memory_bytes", "gauge"},
      {"process_open_fds", "gauge"},
      {"process_max_fds", "gauge"},
      {"process_start_time_seconds", "gauge"},
      {"gateway_build_info", "gauge"},
  };
  for (const auto& [name, type] : families) {
    INFO(name);
    CHECK(e.types[name] == type);
  }
  CHECK(total(e, request_count, request_labels("200")) == 1);
  CHECK(total(e, request_count, {{"http_route", "unmatched"}, {"http_response_status_code", "404"}}) == 1);
  CHECK(total(e, "gateway_event_loop_lag_seconds_count", {{"io_thread", "2"}}) == 0);  // two threads
  CHECK(total(e, "process_resident_memory_bytes") > 1e6);
  CHECK(total(e, "process_open_fds") > 3);
  CHECK(total(e, "process_max_fds") >= total(e, "process_open_fds"));
  // To the second: the value needs ten significant digits.
  CHECK(total(e, "process_start_time_seconds") >= started_after - 1);
  CHECK(total(e, "process_start_time_seconds") <= started_before + 1);
  CHECK(total(e, "gateway_build_info") == 1);
  CHECK(total(e, "gateway_open_connections") == 0);
  CHECK(total(e, "http_server_active_requests") == 0);
  check_clean_exit(gw);
}

TEST_CASE("/metrics counters move as expected after known traffic", "[metrics]") {
  mock_downstream mock({"--delay", "5ms"});
  seed_config cfg{mock.url()};
  gateway_process gw(cfg.yaml());
  auto before = scrape(gw);

  constexpr int n = 5;
  http_connection conn(gw.port());
  for (int i = 0; i < n; ++i) check_offer(conn.get(offer_target(numbered_sku("N", i))), numbered_sku("N", i));
  auto after = scrape_until(
      gw, [&](const exposition& x) { return total(x, request_count, request_labels("200")) >= n; });
  CHECK(total(after, request_count, request_labels("200")) -
            total(before, request_count, request_labels("200")) ==
        n);
  for (const auto& call : seed_calls) {
    INFO(call);
    const label_map ok = {{"downstream", call}, {"outcome", "ok"}};
    CHECK(total(after, "gateway_downstream_calls_total", ok) -
              total(before, "gateway_downstream_calls_total", ok) ==
          n);
    CHECK(total(after, "http_client_request_duration_seconds_count", ok) ==
          total(after, "gateway_downstream_calls_total", ok));
    CHECK(total(after, "http_client_request_duration_seconds_sum", ok) > 0);
  }
  CHECK(total(after, "http_server_request_duration_seconds_sum", request_labels("200")) > 0);
  CHECK(total(after, "gateway_degraded_responses_total") == 0);
  CHECK(total(after, "gateway_fallbacks_total") == 0);

  // A failing coupon: one degraded response, one coupon fallback, one coupon call in error.
  mock.set_mode("coupon", "fail");
  check_offer(conn.get(offer_target("N9")), "N9", {"coupon"});
  auto degraded = scrape_until(
      gw, [&](const exposition& x) { return total(x, request_count, request_labels("200")) >= n + 1; });
  CHECK(total(degraded, "gateway_degraded_responses_total", {{"http_route", route}}) == 1);
  CHECK(total(degraded, "gateway_fallbacks_total", {{"http_route", route}, {"call", "coupon"}}) == 1);
  CHECK(total(degraded, "gateway_fallbacks_total") == 1);
  CHECK(total(degraded, "gateway_downstream_calls_total",
              {{"downstream", "coupon"}, {"outcome", "status_5xx"}}) == 1);
  CHECK(total(degraded, "gateway_downstream_calls_total", {{"downstream", "coupon"}, {"outcome", "ok"}}) ==
        n);

  // A path no route matches is counted as "unmatched".
  check_error(conn.get("/no/such/route"), 404);
  auto unmatched = scrape_until(gw, [&](const exposition& x) {
    return total(x, request_count, {{"http_route", "unmatched"}}) >= 1;
  });
  CHECK(total(unmatched, request_count,
              {{"http_route", "unmatched"}, {"http_response_status_code", "404"}}) == 1);
  CHECK(total(unmatched, "gateway_open_connections") == 1);  // `conn`
  check_clean_exit(gw);
}

TEST_CASE("/metrics counts requests shed beyond max_inflight and max_connections", "[metrics][shed]") {
  mock_downstream mock(all_hang_args("5ms"));
  seed_config cfg{mock.url()};
  cfg.deadline = "5s";
  cfg.limits = "  max_inflight: 1\n  max_connections: 2\n";
  gateway_process gw(cfg.yaml());

  http_connection holder(gw.port());
  holder.send_request("GET", offer_target("S1"));
  mock.wait_stats([&](const auto& s) { return sum_over_calls(mock, s, "requests") == 6; });
  http_connection second(gw.port());
  auto shed = second.get(offer_target("S2"), {}, 3s);
  check_error(shed, 503);
  // A third connection while two are open.
  http_connection third(gw.port());
  check_error(third.read_response(3s), 503);

  auto e = scrape_until(gw, [](const exposition& x) {
    return total(x, "gateway_shed_requests_total", {{"reason", "max_connections"}}) >= 1 &&
           total(x, request_count, {{"http_response_status_code", "503"}}) >= 1;
  });
  CHECK(total(e, "gateway_shed_requests_total", {{"reason", "max_inflight"}}) == 1);
  CHECK(total(e, "gateway_shed_requests_total", {{"reason", "max_connections"}}) == 1);
  CHECK(total(e, request_count, {{"http_response_status_code", "503"}}) == 1);
  CHECK(total(e, "http_server_active_requests") == 1);
  CHECK(total(e, "gateway_open_connections") == 2);
  // One per connection: HTTP calls run as state machines, without a coroutine (SQL calls have one).
  CHECK(total(e, "gateway_coroutines_active") == 2);
  CHECK(sum_over_calls(mock, mock.stats(), "requests") == 6);
  holder.close();  // its calls are cancelled, so the exit need not wait for the deadline
  check_clean_exit(gw);
}

TEST_CASE("/metrics counts a client that goes away mid-request as a disconnect with status 499",
          "[metrics][cancel]") {
  mock_downstream mock(all_hang_args("5ms"));
  seed_config cfg{mock.url()};
  cfg.deadline = "5s";
  gateway_process gw(cfg.yaml());
  {
    http_connection conn(gw.port());
    conn.send_request("GET", offer_target("C1"));
    auto stats = mock.wait_stats([&](const auto& s) { return sum_over_calls(mock, s, "requests") == 6; });
    REQUIRE(sum_over_calls(mock, stats, "requests") == 6);
    auto busy = scrape(gw);
    CHECK(total(busy, "http_server_active_requests") == 1);
  }
  // One scrape reads the active-request gauge before the counters: a scrape taken while the request ends
  // can show it both active and counted, so wait for both to settle.
  auto e = scrape_until(gw, [](const exposition& x) {
    return total(x, "gateway_client_disconnects_total") >= 1 && total(x, request_count) >= 1 &&
           total(x, "http_server_active_requests") == 0;
  });
  CHECK(total(e, "gateway_client_disconnects_total") == 1);
  CHECK(total(e, request_count, request_labels("499")) == 1);
  CHECK(total(e, "http_server_active_requests") == 0);
  for (const auto& call : seed_calls) {
    INFO(call);
    CHECK(total(e, "gateway_downstream_calls_total", {{"downstream", call}, {"outcome", "cancelled"}}) == 1);
  }
  check_clean_exit(gw);
}

// Metrics must agree with what the client got: a 502 from a failed required call served no fallback and
// no degraded entry; 404 and 405 keep the method they were asked with (_OTHER is for unknown methods).
TEST_CASE("/metrics agree with the answers: error answers count no fallbacks, methods keep their names",
          "[metrics][required]") {
  mock_downstream mock({"--delay", "5ms", "--path", "inventory=fail"});
  seed_config cfg{mock.url()};
  cfg.required_calls = {"inventory"};
  gateway_process gw(cfg.yaml());
  http_connection conn(gw.port());
  check_error(conn.get(offer_target("M1")), 502);
  check_error(conn.get("/no/such/route"), 404);
  check_error(conn.request("DELETE", offer_target("M2")), 405);
  check_error(conn.request("BREW", "/no/such/route"), 404);
  auto e = scrape_until(gw, [&](const exposition& x) {
    return total(x, request_count, {{"http_response_status_code", "502"}}) >= 1 &&
           total(x, request_count, {{"http_route", "unmatched"}}) >= 2 &&
           total(x, request_count, {{"http_response_status_code", "405"}}) >= 1;
  });
  CHECK(total(e, request_count, request_labels("502")) == 1);
  CHECK(total(e, "gateway_degraded_responses_total") == 0);
  CHECK(total(e, "gateway_fallbacks_total") == 0);
  CHECK(total(e, request_count,
              {{"http_route", "unmatched"},
               {"http_request_method", "GET"},
               {"http_response_status_code", "404"}}) == 1);
  // A 405 matched a route's path: it counts under that route.
  CHECK(total(e, request_count,
              {{"http_route", "/api/offer/aggregate"},
               {"http_request_method", "DELETE"},
               {"http_response_status_code", "405"}}) == 1);
  CHECK(total(e, request_count,
              {{"http_route", "unmatched"},
               {"http_request_method", "_OTHER"},
               {"http_response_status_code", "404"}}) == 1);
  check_clean_exit(gw);
}

TEST_CASE("metrics: a failed call is counted by its kind and every outcome is shown from the start",
          "[metrics]") {
  mock_downstream mock;
  refused_port refused;
  seed_config cfg{mock.url()};
  cfg.url_override["logistics-eta"] = "http://127.0.0.1:" + std::to_string(refused.port());
  gateway_process gw(cfg.yaml());

  // Before any request: each downstream's every outcome at zero, and the route's GET 200 series.
  auto start = scrape(gw);
  for (const auto* outcome :
       {"ok", "timeout", "cancelled", "rejected", "circuit_open", "stale", "status_4xx", "status_5xx",
        "invalid_body", "too_large", "refused", "reset", "tls", "error"}) {
    INFO(outcome);
    CHECK(has_sample(start, "gateway_downstream_calls_total",
                     {{"downstream", "coupon"}, {"outcome", outcome}}));
  }
  CHECK(has_sample(start, "http_client_request_duration_seconds_count",
                   {{"downstream", "coupon"}, {"outcome", "ok"}}));
  CHECK(has_sample(
      start, "http_server_request_duration_seconds_count",
      {{"http_route", route}, {"http_request_method", "GET"}, {"http_response_status_code", "200"}}));

  // One kind per downstream: a 500, a body that is not JSON, one that is not an object, one above
  // max_response_bytes, a reset, a refused connection.
  mock.set_mode("coupon", "fail");
  mock.set_mode("channel-price", "garbage");
  mock.set_mode("review-summary", "notobject");
  mock.set_mode("recommendation", "big");
  mock.set_mode("inventory", "reset");
  http_connection conn(gw.port());
  check_offer(conn.get(offer_target("K1")), "K1",
              {"inventory", "channel-price", "coupon", "review-summary", "logistics-eta", "recommendation"});
  const auto e =
      scrape_until(gw, [](const exposition& x) { return total(x, "gateway_fallbacks_total") >= 6; });
  const auto kind = [&](const std::string& downstream, const std::string& outcome) {
    return total(e, "gateway_downstream_calls_total", {{"downstream", downstream}, {"outcome", outcome}});
  };
  CHECK(kind("coupon", "status_5xx") == 1);
  CHECK(kind("channel-price", "invalid_body") == 1);
  CHECK(kind("review-summary", "invalid_body") == 1);
  CHECK(kind("recommendation", "too_large") == 1);
  CHECK(kind("inventory", "reset") == 1);
  CHECK(kind("logistics-eta", "refused") == 1);
  CHECK(total(e, "gateway_downstream_calls_total", {{"outcome", "error"}}) == 0);

  // OpenTelemetry's error.type and server.address: a failure's kind, and the host of the downstream.
  CHECK(total(e, "gateway_downstream_calls_total",
              {{"downstream", "coupon"}, {"error_type", "status_5xx"}}) == 1);
  CHECK(
      total(e, "http_client_request_duration_seconds_count",
            {{"downstream", "logistics-eta"}, {"error_type", "refused"}, {"server_address", "127.0.0.1"}}) ==
      1);
  for (const auto& s : e.samples) {
    if (s.name != "gateway_downstream_calls_total") continue;
    INFO(s.name << " " << s.labels.at("downstream") << " " << s.labels.at("outcome"));
    CHECK(s.labels.count("server_address") == 1);  // every one of these is an HTTP downstream
    // An ok call has no error type; every other outcome is its own.
    if (s.labels.at("outcome") == "ok") {
      CHECK(s.labels.count("error_type") == 0);
    } else {
      CHECK(s.labels.count("error_type") == 1);
      if (s.labels.count("error_type") == 1) CHECK(s.labels.at("error_type") == s.labels.at("outcome"));
    }
  }
}
