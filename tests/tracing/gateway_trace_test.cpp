// The gateway's own traces, end to end: the real gateway exports to the receiver that decodes with the
// official OTLP definitions; the mock downstream records the traceparents each path received. A request
// with a sampled parent, one degraded at a ratio of 0 (always kept), and healthy ones that must not be
// kept; the spans of retried and hedged calls' attempts, of a SQLite call and of a pass-through exchange.

#include "tests/support/http_client.hpp"
#include "tests/support/offer_checks.hpp"
#include "tests/support/processes.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/tracing/collectors.hpp"
#include "tests/tracing/decoded_spans.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

using namespace test_support;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

std::string last_traceparent(const json& stats, const std::string& path) {
  return stats.at("paths").at(path).value("last_traceparent", "");
}

// Every traceparent the mock received on `path` (its last 8), oldest first.
std::vector<std::string> traceparents(const json& stats, const std::string& path) {
  return stats.at("paths").at(path).value("traceparents", std::vector<std::string>{});
}

std::string traceparent_of(const std::string& trace, const json& span) {
  return "00-" + trace + "-" + span.at("spanId").get<std::string>() + "-01";
}

std::string tracing_section(const otlp_receiver& receiver, const std::string& ratio) {
  return "tracing:\n  enabled: true\n  endpoint: " + receiver.endpoint() + "\n  sample_ratio: " + ratio +
         "\n  batch_delay: 100ms\n";
}

// One pass-through route, /shop/ to the mock's paths, traced at a ratio of 0.
std::string pass_through_config(const mock_downstream& mock, const otlp_receiver& receiver) {
  return "server:\n  listen: 127.0.0.1:0\n  threads: 1\ndownstreams:\n  shop:\n    url: " + mock.url() +
         "\n" +
         R"(routes:
  - path_prefix: /shop/
    proxy:
      downstream: shop
      rewrite: /
)" + tracing_section(receiver, "0");
}

// A trace of two spans, polled for as wait_for_spans does: the server span and the one client span under
// it (a SQL call, a pass-through exchange).
struct two_spans {
  nlohmann::json server;
  nlohmann::json client;
};
two_spans server_and_client(const otlp_receiver& receiver, const std::string& trace) {
  const auto spans = wait_for_spans(receiver, trace, 2);
  INFO(receiver.errors());
  REQUIRE(spans.size() == 2);
  const auto servers = of_kind(spans, server_span);
  const auto clients = of_kind(spans, client_span);
  REQUIRE(servers.size() == 1);
  REQUIRE(clients.size() == 1);
  CHECK(clients.front()->at("parentSpanId") == servers.front()->at("spanId"));
  return {*servers.front(), *clients.front()};
}

}  // namespace

TEST_CASE(
    "gateway traces: a server span per request and per call a span with its attempt whose id the downstream "
    "receives",
    "[otlp-receiver]") {
  otlp_receiver receiver(RECEIVER_DIR);
  mock_downstream mock;
  seed_config cfg{mock.url()};
  gateway_process gw(cfg.yaml() + tracing_section(receiver, "0"));

  // 1. A sampled parent: kept. Its calls' traceparents are checked against the mock's record now.
  const std::string kept_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
  check_offer(
      http_get(gw.port(), offer_target("T1"), {{"traceparent", "00-" + kept_trace + "-00f067aa0ba902b7-01"}}),
      "T1");
  const auto stats = mock.stats();
  // 2. A degraded request with an unsampled parent, at a ratio of 0: kept all the same (tail rule).
  const std::string degraded_trace = "0af7651916cd43dd8448eb211c80319c";
  mock.set_mode("coupon", "fail");
  check_offer(http_get(gw.port(), offer_target("T2"),
                       {{"traceparent", "00-" + degraded_trace + "-b7ad6b7169203331-00"}}),
              "T2", {"coupon"});
  const auto degraded_stats = mock.stats();
  mock.set_mode("coupon", "ok");
  // 3. Healthy, unsampled or without a parent at a ratio of 0: not kept.
  const std::string dropped_trace = "11111111111111111111111111111111";
  check_offer(http_get(gw.port(), offer_target("T3"),
                       {{"traceparent", "00-" + dropped_trace + "-b7ad6b7169203331-00"}}),
              "T3");
  check_offer(http_get(gw.port(), offer_target("T4")), "T4");

  std::map<std::string, std::vector<json>> traces;
  for (int i = 0; i < 60; ++i) {
    traces = spans_by_trace(receiver);
    if (traces[kept_trace].size() >= 13 && traces[degraded_trace].size() >= 7) break;
    std::this_thread::sleep_for(50ms);
  }
  std::this_thread::sleep_for(300ms);  // a batch with the unkept ones would have come by now
  traces = spans_by_trace(receiver);
  INFO(receiver.errors());
  // Per request: its server span and per call (six) its span; sampled at the head, also each call's one
  // attempt's. The request kept by the tail rule alone has no attempt spans: its calls sent the server
  // span's id, flagged not sampled.
  REQUIRE(traces[kept_trace].size() == 13);
  REQUIRE(traces[degraded_trace].size() == 7);
  CHECK(traces.size() == 2);  // nothing else: the healthy unsampled requests were not exported

  for (const auto& [trace, spans] : traces) {
    INFO("trace " << trace);
    const auto servers = of_kind(spans, server_span);
    REQUIRE(servers.size() == 1);
    const auto& server = *servers.front();
    CHECK(server.at("name") == "GET /api/offer/aggregate");
    CHECK(server.at("parentSpanId") == (trace == kept_trace ? "00f067aa0ba902b7" : "b7ad6b7169203331"));
    const auto attributes = attributes_of(server);
    CHECK(attributes.at("http.route") == "/api/offer/aggregate");
    CHECK(attributes.at("http.request.method") == "GET");
    CHECK(attributes.at("http.response.status_code") == "200");  // int64 as a decimal string
    CHECK(attributes.at("gateway.degraded") == (trace == degraded_trace));
    std::map<std::string, const json*> by_call;
    for (const auto* s : of_kind(spans, internal_span)) {
      CHECK(s->at("parentSpanId") == server.at("spanId"));
      by_call[attributes_of(*s).at("gateway.call")] = s;
    }
    REQUIRE(by_call.size() == seed_calls.size());
    CHECK(of_kind(spans, client_span).size() == (trace == kept_trace ? seed_calls.size() : 0));
    for (const auto& call : seed_calls) {
      INFO(call);
      const auto& s = *by_call.at(call);
      const auto a = attributes_of(s);
      const bool failed = trace == degraded_trace && call == "coupon";
      CHECK(a.at("gateway.outcome") == (failed ? "status_5xx" : "ok"));
      CHECK(a.at("gateway.downstream") == call);
      CHECK(status_of(s) == (failed ? 2 : 1));
      CHECK(end_of(s) >= start_of(s));
      const auto attempts = children_of(spans, s);
      if (trace == degraded_trace) {
        CHECK(attempts.empty());
        CHECK(last_traceparent(degraded_stats, call) ==
              "00-" + degraded_trace + "-" + server.at("spanId").get<std::string>() + "-00");
        continue;
      }
      // Its one attempt: the client span, whose id the downstream received as its parent.
      REQUIRE(attempts.size() == 1);
      const auto& attempt = *attempts.front();
      const auto aa = attributes_of(attempt);
      CHECK(attempt.at("kind") == client_span);
      CHECK(attempt.at("name") == "GET");
      CHECK(aa.at("gateway.attempt") == "1");
      CHECK_FALSE(aa.count("http.request.resend_count"));
      CHECK(aa.at("server.address") == "127.0.0.1");
      CHECK(aa.at("server.port") == std::to_string(mock.port()));
      CHECK(aa.at("url.full") == mock.url() + "/" + call + "?sku=T1");
      CHECK(aa.at("http.response.status_code") == "200");
      CHECK(status_of(attempt) == 1);
      CHECK(start_of(attempt) >= start_of(s));
      CHECK(end_of(attempt) <= end_of(s));
      // First request: the mock's record before the others.
      CHECK(last_traceparent(stats, call) == traceparent_of(kept_trace, attempt));
    }
  }
  const auto metrics = http_get(gw.admin_port(), "/metrics").body;
  CHECK(metrics.find("gateway_trace_spans_exported_total 20") != std::string::npos);
}

TEST_CASE(
    "gateway traces: each retry and hedge is a client span under its call's span and sends its own "
    "traceparent",
    "[otlp-receiver]") {
  otlp_receiver receiver(RECEIVER_DIR);
  // retried: its first request answers 503 (retried), the second 200. hedged: every answer takes 150 ms,
  // so a hedge goes after 20 ms and loses to the first attempt.
  mock_downstream mock({"--path", "retried=flaky", "--path", "hedged=ok:150ms"});
  gateway_process gw(
      "server:\n  listen: 127.0.0.1:0\n  threads: 1\ndownstreams:\n  flaky:\n    url: " + mock.url() +
      "\n  slow:\n    url: " + mock.url() + "\n    hedge: {delay: 20ms, budget_percent: 100}\n" + R"(routes:
  - path: /api/attempts
    deadline: 2s
    params:
      sku: {required: true}
    calls:
      - {name: retried, downstream: flaky, path: '/retried?sku={sku}&api_key=s3cr3t&lang=en'}
      - {name: hedged, downstream: slow, path: '/hedged?sku={sku}'}
)" + tracing_section(receiver, "0"));

  const std::string trace = "5bf92f3577b34da6a3ce929d0e0e4736";
  const auto res =
      http_get(gw.port(), "/api/attempts?sku=R1", {{"traceparent", "00-" + trace + "-00f067aa0ba902b7-01"}});
  REQUIRE(res.status == 200);
  CHECK_FALSE(res.has_header("x-degraded"));
  const auto stats = mock.stats();

  // The server span, two call spans, two attempts each.
  const auto spans = wait_for_spans(receiver, trace, 7);
  INFO(receiver.errors());
  REQUIRE(spans.size() == 7);
  const auto servers = of_kind(spans, server_span);
  REQUIRE(servers.size() == 1);
  std::map<std::string, const json*> by_call;
  for (const auto* s : of_kind(spans, internal_span)) {
    CHECK(s->at("parentSpanId") == servers.front()->at("spanId"));
    by_call[attributes_of(*s).at("gateway.call")] = s;
  }
  REQUIRE(by_call.size() == 2);

  {  // The retried call: the failed attempt, then the retry that answered.
    INFO("retried");
    const auto& call = *by_call.at("retried");
    CHECK(attributes_of(call).at("gateway.outcome") == "ok");
    CHECK(status_of(call) == 1);
    const auto attempts = children_of(spans, call);
    REQUIRE(attempts.size() == 2);
    const auto first = attributes_of(*attempts[0]);
    const auto retry = attributes_of(*attempts[1]);
    CHECK(first.at("gateway.attempt") == "1");
    CHECK_FALSE(first.count("http.request.resend_count"));
    CHECK(first.at("http.response.status_code") == "503");
    CHECK(first.at("gateway.outcome") == "status_5xx");
    CHECK(status_of(*attempts[0]) == 2);
    CHECK(retry.at("gateway.attempt") == "2");
    CHECK(retry.at("http.request.resend_count") == "1");
    CHECK(retry.at("http.response.status_code") == "200");
    CHECK(retry.at("gateway.outcome") == "ok");
    CHECK(status_of(*attempts[1]) == 1);
    CHECK(start_of(*attempts[1]) >= end_of(*attempts[0]));  // after the failure and its backoff
    for (const auto& a : {first, retry}) {
      CHECK(a.at("url.full") == mock.url() + "/retried?sku=R1&api_key=REDACTED&lang=en");
      CHECK(a.at("server.address") == "127.0.0.1");
      CHECK(a.at("server.port") == std::to_string(mock.port()));
      CHECK_FALSE(a.count("gateway.hedge"));
    }
    // Each attempt's request carried its own span's id.
    CHECK(traceparents(stats, "retried") ==
          std::vector<std::string>{traceparent_of(trace, *attempts[0]), traceparent_of(trace, *attempts[1])});
  }

  {  // The hedged call: the first attempt and its hedge, one winning and the other cancelled.
    INFO("hedged");
    const auto& call = *by_call.at("hedged");
    CHECK(attributes_of(call).at("gateway.outcome") == "ok");
    const auto attempts = children_of(spans, call);
    REQUIRE(attempts.size() == 2);
    const auto first = attributes_of(*attempts[0]);
    const auto hedge = attributes_of(*attempts[1]);
    CHECK(first.at("gateway.attempt") == "1");
    CHECK_FALSE(first.count("gateway.hedge"));
    CHECK(hedge.at("gateway.attempt") == "2");
    CHECK(hedge.at("http.request.resend_count") == "1");
    CHECK(hedge.at("gateway.hedge") == true);
    CHECK(start_of(*attempts[1]) >= start_of(*attempts[0]) + 20'000'000);  // the hedge delay
    const std::set<std::string> outcomes = {first.at("gateway.outcome"), hedge.at("gateway.outcome")};
    CHECK(outcomes == std::set<std::string>{"ok", "cancelled"});
    CHECK(hedge.at("url.full") == mock.url() + "/hedged?sku=R1");
    const auto sent = traceparents(stats, "hedged");
    CHECK(std::set<std::string>(sent.begin(), sent.end()) ==
          std::set<std::string>{traceparent_of(trace, *attempts[0]), traceparent_of(trace, *attempts[1])});
  }
}

TEST_CASE("gateway traces: a SQLite call is a client span with its database and its wait for a permit",
          "[otlp-receiver]") {
  otlp_receiver receiver(RECEIVER_DIR);
  temp_dir dir;
  const auto database = dir.write("empty.db", "");  // an empty file is an empty database
  gateway_process gw("server:\n  listen: 127.0.0.1:0\n  threads: 1\n" + std::string(R"(downstreams:
  db:
    kind: sql
    driver: sqlite
    database: ')") + database +
                     R"('
    pool_size: 2
    permits: 1
    query: 'SELECT :sku AS sku, 3 AS stock'
routes:
  - path: /api/sql
    params:
      sku: {required: true}
    calls:
      - {name: inventory, downstream: db}
)" + tracing_section(receiver, "1"));

  const std::string trace = "6bf92f3577b34da6a3ce929d0e0e4736";
  const auto res =
      http_get(gw.port(), "/api/sql?sku=S1", {{"traceparent", "00-" + trace + "-00f067aa0ba902b7-01"}});
  REQUIRE(res.status == 200);
  CHECK(res.json()[0]["sku"] == "S1");

  const auto [server, call] = server_and_client(receiver, trace);  // no attempts: the call is the exchange
  CHECK(call.at("name") == "inventory");
  CHECK(status_of(call) == 1);
  const auto a = attributes_of(call);
  CHECK(a.at("gateway.call") == "inventory");
  CHECK(a.at("gateway.downstream") == "db");
  CHECK(a.at("gateway.outcome") == "ok");
  CHECK(a.at("db.system") == "sqlite");
  REQUIRE(a.count("gateway.sql.semaphore_wait_ms"));
  CHECK(a.at("gateway.sql.semaphore_wait_ms").is_number());
  CHECK(a.at("gateway.sql.semaphore_wait_ms").get<double>() >= 0.0);
  CHECK(a.at("gateway.sql.semaphore_wait_ms").get<double>() < 1000.0);
}

TEST_CASE(
    "gateway traces: a pass-through exchange is a client span whose traceparent the downstream receives",
    "[otlp-receiver]") {
  otlp_receiver receiver(RECEIVER_DIR);
  mock_downstream mock({"--record-headers", "tracestate"});
  gateway_process gw(pass_through_config(mock, receiver));

  http_connection client(gw.port());
  const std::string get_trace = "7bf92f3577b34da6a3ce929d0e0e4736";
  const auto got = client.request(
      "GET", "/shop/coupon?sku=77&token=abc",
      {{"traceparent", "00-" + get_trace + "-00f067aa0ba902b7-01"}, {"tracestate", "vendor=v1"}});
  REQUIRE(got.status == 200);
  const auto stats = mock.stats();
  const std::string post_trace = "8bf92f3577b34da6a3ce929d0e0e4736";
  const std::string body = R"({"q":1})";
  const auto posted = client.request(
      "POST", "/shop/coupon?sku=78",
      {{"traceparent", "00-" + post_trace + "-00f067aa0ba902b7-01"}, {"Content-Type", "application/json"}},
      body);
  REQUIRE(posted.status == 200);

  for (const auto& [trace, response, bytes_up] :
       {std::tuple{get_trace, got, std::size_t{0}}, std::tuple{post_trace, posted, body.size()}}) {
    INFO("trace " << trace);
    const auto [server, exchange] = server_and_client(receiver, trace);
    CHECK(server.at("parentSpanId") == "00f067aa0ba902b7");
    CHECK(status_of(exchange) == 1);
    const auto a = attributes_of(exchange);
    const bool get = trace == get_trace;
    CHECK(exchange.at("name") == (get ? "GET" : "POST"));
    CHECK(a.at("http.request.method") == (get ? "GET" : "POST"));
    CHECK(a.at("url.full") == mock.url() + (get ? "/coupon?sku=77&token=REDACTED" : "/coupon?sku=78"));
    CHECK(a.at("server.address") == "127.0.0.1");
    CHECK(a.at("server.port") == std::to_string(mock.port()));
    CHECK(a.at("http.response.status_code") == "200");
    CHECK(a.at("gateway.request_bytes") == std::to_string(bytes_up));
    CHECK(a.at("gateway.response_bytes") == std::to_string(response.body.size()));
    CHECK(start_of(exchange) >= start_of(server));
    CHECK(end_of(exchange) <= end_of(server));
    // The downstream's parent is the exchange's span, not the client's; the trace's tracestate goes along.
    if (get) {
      CHECK(last_traceparent(stats, "coupon") == traceparent_of(trace, exchange));
      CHECK(stats.at("paths").at("coupon").at("last_headers").value("tracestate", "") == "vendor=v1");
    } else {
      CHECK(last_traceparent(mock.stats(), "coupon") == traceparent_of(trace, exchange));
    }
  }
}

TEST_CASE("gateway traces: an unreachable collector costs nothing but dropped spans", "[tracing]") {
  refused_port closed;
  mock_downstream mock;
  seed_config cfg{mock.url()};
  gateway_process gw(cfg.yaml() + "tracing:\n  enabled: true\n  endpoint: http://127.0.0.1:" +
                     std::to_string(closed.port()) + "/v1/traces" +
                     "\n  batch_delay: 50ms\n  export_timeout: 200ms\n");
  for (int i = 0; i < 20; ++i)
    check_offer(http_get(gw.port(), offer_target("U" + std::to_string(i))), "U" + std::to_string(i));
  std::string page;
  for (int i = 0; i < 40; ++i) {
    page = http_get(gw.admin_port(), "/metrics").body;
    if (page.find("gateway_trace_export_failures_total 0") == std::string::npos) break;
    std::this_thread::sleep_for(50ms);
  }
  INFO(page.substr(page.find("gateway_trace")));
  CHECK(page.find("gateway_trace_export_failures_total 0") == std::string::npos);
  CHECK(page.find("gateway_trace_spans_exported_total 0") != std::string::npos);
  CHECK(page.find("gateway_trace_spans_dropped_total 0") == std::string::npos);
  CHECK(gw.running());
}

TEST_CASE(
    "gateway traces: a pass-through exchange not sampled is exported only when it failed with the span id "
    "its downstream received",
    "[otlp-receiver]") {
  otlp_receiver receiver(RECEIVER_DIR);
  mock_downstream mock;
  gateway_process gw(pass_through_config(mock, receiver));

  http_connection client(gw.port());
  // Healthy and not sampled: the downstream still gets the trace (flag 00), nothing is exported.
  const std::string healthy_trace = "9bf92f3577b34da6a3ce929d0e0e4736";
  REQUIRE(client
              .request("GET", "/shop/coupon?sku=1",
                       {{"traceparent", "00-" + healthy_trace + "-00f067aa0ba902b7-00"}})
              .status == 200);
  const auto healthy_sent = last_traceparent(mock.stats(), "coupon");
  CHECK(std::regex_match(healthy_sent, std::regex("00-" + healthy_trace + "-[0-9a-f]{16}-00")));
  // Failed (the downstream's 500) and not sampled: kept by the tail rule, with the exchange's span whose id
  // the downstream received.
  mock.set_mode("coupon", "fail");
  const std::string failed_trace = "abf92f3577b34da6a3ce929d0e0e4736";
  REQUIRE(client
              .request("GET", "/shop/coupon?sku=2",
                       {{"traceparent", "00-" + failed_trace + "-00f067aa0ba902b7-00"}})
              .status == 500);
  const auto failed_sent = last_traceparent(mock.stats(), "coupon");

  const auto [server, exchange] = server_and_client(receiver, failed_trace);
  CHECK(failed_sent == "00-" + failed_trace + "-" + exchange.at("spanId").get<std::string>() + "-00");
  CHECK(status_of(exchange) == 2);
  const auto a = attributes_of(exchange);
  CHECK(a.at("http.response.status_code") == "500");
  CHECK(a.at("url.full") == mock.url() + "/coupon?sku=2");
  CHECK(start_of(exchange) >= start_of(server));
  std::this_thread::sleep_for(300ms);  // a batch with the healthy request would have come by now
  CHECK(spans_by_trace(receiver).count(healthy_trace) == 0);
}
