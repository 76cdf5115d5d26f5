// The gateway's own traces, end to end: the real gateway exports to the receiver that decodes with the
// official OTLP definitions; the mock downstream records the traceparent each call carried. A request with
// a sampled parent, one degraded at a ratio of 0 (always kept), and healthy ones that must not be kept.

#include "tests/support/http_client.hpp"
#include "tests/support/offer_checks.hpp"
#include "tests/support/processes.hpp"
#include "tests/tracing/collectors.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

using namespace test_support;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

// Every span the receiver decoded so far, by trace id.
std::map<std::string, std::vector<json>> spans_by_trace(const otlp_receiver& receiver) {
  std::map<std::string, std::vector<json>> out;
  for (const auto& r : receiver.requests()) {
    if (!r.contains("request")) continue;
    for (const auto& rs : r.at("request").value("resourceSpans", json::array()))
      for (const auto& ss : rs.value("scopeSpans", json::array()))
        for (const auto& s : ss.value("spans", json::array())) out[s.at("traceId")].push_back(s);
  }
  return out;
}

std::map<std::string, json> attributes_of(const json& span) {
  std::map<std::string, json> out;
  for (const auto& kv : span.value("attributes", json::array())) {
    const auto& v = kv.at("value");
    out[kv.at("key")] = v.at(v.at("value").get<std::string>());
  }
  return out;
}

std::string last_traceparent(const json& stats, const std::string& call) {
  return stats.at("paths").at(call).value("last_traceparent", "");
}

}  // namespace

TEST_CASE(
    "gateway traces: a server span per request and a client span per call whose id the downstream receives",
    "[otlp-receiver]") {
  otlp_receiver receiver(RECEIVER_DIR);
  mock_downstream mock;
  seed_config cfg{mock.url()};
  const auto yaml = cfg.yaml() + "tracing:\n  enabled: true\n  endpoint: " + receiver.endpoint() +
                    "\n  sample_ratio: 0\n  batch_delay: 100ms\n";
  gateway_process gw(yaml);

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
    if (traces[kept_trace].size() >= 7 && traces[degraded_trace].size() >= 7) break;
    std::this_thread::sleep_for(50ms);
  }
  std::this_thread::sleep_for(300ms);  // a batch with the unkept ones would have come by now
  traces = spans_by_trace(receiver);
  INFO(receiver.errors());
  REQUIRE(traces[kept_trace].size() == 7);
  REQUIRE(traces[degraded_trace].size() == 7);
  CHECK(traces.size() == 2);  // nothing else: the healthy unsampled requests were not exported

  for (const auto& [trace, spans] : traces) {
    INFO("trace " << trace);
    const json* server = nullptr;
    for (const auto& s : spans) {
      if (s.at("kind") == 2) server = &s;
    }
    REQUIRE(server != nullptr);
    CHECK(server->at("name") == "GET /api/offer/aggregate");
    CHECK(server->at("parentSpanId") == (trace == kept_trace ? "00f067aa0ba902b7" : "b7ad6b7169203331"));
    const auto attributes = attributes_of(*server);
    CHECK(attributes.at("http.route") == "/api/offer/aggregate");
    CHECK(attributes.at("http.request.method") == "GET");
    CHECK(attributes.at("http.response.status_code") == "200");  // int64 as a decimal string
    CHECK(attributes.at("gateway.degraded") == (trace == degraded_trace));
    std::map<std::string, const json*> by_call;
    for (const auto& s : spans) {
      if (s.at("kind") != 3) continue;
      CHECK(s.at("parentSpanId") == server->at("spanId"));
      by_call[attributes_of(s).at("gateway.call")] = &s;
    }
    REQUIRE(by_call.size() == seed_calls.size());
    for (const auto& call : seed_calls) {
      INFO(call);
      const auto& s = *by_call.at(call);
      const auto a = attributes_of(s);
      const bool failed = trace == degraded_trace && call == "coupon";
      CHECK(a.at("gateway.outcome") == (failed ? "status_5xx" : "ok"));
      CHECK(s.at("status").value("code", 0) == (failed ? 2 : 1));
      CHECK(std::stoull(s.at("endTimeUnixNano").get<std::string>()) >=
            std::stoull(s.at("startTimeUnixNano").get<std::string>()));
      if (call != "inventory") CHECK(a.at("server.address") == "127.0.0.1");
      // The downstream's parent is this client span (first request: the mock's record before the others).
      if (trace == kept_trace) {
        CHECK(last_traceparent(stats, call) ==
              "00-" + kept_trace + "-" + s.at("spanId").get<std::string>() + "-01");
      }
    }
  }
  const auto metrics = http_get(gw.admin_port(), "/metrics").body;
  CHECK(metrics.find("gateway_trace_spans_exported_total 14") != std::string::npos);
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
