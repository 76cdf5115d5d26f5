// The tracer's OTLP/HTTP export through real sockets. What it sends is decoded by an independent
// implementation, receiver/receiver.js: the protobufjs module generated from the official opentelemetry-proto
// definitions (npm @opentelemetry/otlp-proto-exporter-base, pinned in receiver/package-lock.json and
// installed by the "npm ci" fixture). A collector that refuses connections or never answers must cost
// dropped spans only, and shutdown() must keep its deadline.

#include "gateway/observe/tracing.hpp"
#include "tests/tracing/collectors.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <limits>
#include <map>
#include <thread>

using namespace gateway;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

namespace attr = span_attributes;

tracing_settings settings_for(const std::string& endpoint) {
  tracing_settings s;
  s.enabled = true;
  s.endpoint = endpoint;
  s.service_name = "gateway-under-test";
  s.batch_delay = 1h;  // exports go when a batch is full, or at shutdown
  return s;
}

// Polls `done` until it holds, at most `limit`.
template <class Pred>
bool eventually(Pred done, std::chrono::milliseconds limit = 10s) {
  const auto until = clock::now() + limit;
  while (!done()) {
    if (clock::now() >= until) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

trace_record small_record() {
  auto r = begin_trace("", "", 1.0, unix_nanos_now());
  r.server.name = "GET /items";
  r.add_client("items", unix_nanos_now()).end_ns = unix_nanos_now();
  r.server.end_ns = unix_nanos_now();
  return r;
}

// A request whose call was retried (the first attempt failed to connect) and hedged, with every
// attribute type and the edges of each.
trace_record retried_request(const tracer& t) {
  const std::uint64_t start = 1'700'000'000'123'456'789;  // above 2^53: must survive as an integer
  auto r = t.begin("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor=opaque,other=1", start);
  r.server.name = "GET /users/{id}";
  r.server.end_ns = start + 100'000'000;
  r.server.status = span_status::ok;
  r.server.set(attr::http_request_method, "GET");
  r.server.set(attr::http_route, "/users/{id}");
  r.server.set(attr::http_response_status_code, 200);
  r.server.set(attr::degraded, false);
  r.server.set("test.unicode", "h\u00e9llo \u2713");
  r.server.set("test.empty", "");
  r.server.set("test.int_max", std::numeric_limits<std::int64_t>::max());
  r.server.set("test.int_min", std::numeric_limits<std::int64_t>::min());
  r.server.set("test.zero", 0);
  r.server.set("test.double", -0.5);

  span& first = r.add_client("users", start + 1'000);
  first.end_ns = start + 2'000'000;
  first.fail("connect: Connection refused");
  first.set(attr::call, "users");
  first.set(attr::attempt, 1);
  first.set(attr::outcome, "connect_failed");
  first.set(attr::server_address, "10.0.0.7");
  first.set(attr::server_port, 8080);
  first.set(attr::url_full, attr::full_url("http://10.0.0.7:8080", "/users/7?token=abc&v=2"));
  first.set(attr::breaker_state, "closed");

  span& second = r.add_client("users", start + 3'000'000);
  second.end_ns = start + 9'000'000;
  second.status = span_status::ok;
  second.set(attr::call, "users");
  second.set(attr::attempt, 2);
  second.set(attr::http_response_status_code, 200);
  second.set(attr::semaphore_wait_ms, 1.25);

  span& hedge = r.add_client("users", start + 5'000'000);  // lost the race: status left unset
  hedge.end_ns = start + 9'000'001;
  hedge.set(attr::attempt, 2);
  hedge.set(attr::degraded, true);
  return r;
}

// Checks a decoded span (receiver.js's JSON) against the span that was sent.
void check_span(const json& got, const trace_record& record, const span& sent) {
  INFO("span " << sent.name << " " << to_hex(sent.id) << ": " << got.dump());
  CHECK(got.at("traceId") == to_hex(record.trace));
  CHECK(got.at("spanId") == to_hex(sent.id));
  if (is_zero(sent.parent)) {
    CHECK_FALSE(got.contains("parentSpanId"));
  } else {
    CHECK(got.value("parentSpanId", "") == to_hex(sent.parent));
  }
  CHECK(got.value("traceState", "") == record.tracestate);
  CHECK(got.at("name") == sent.name);
  CHECK(got.at("kind") == static_cast<int>(sent.kind));
  CHECK(got.at("startTimeUnixNano") == std::to_string(sent.start_ns));
  CHECK(got.at("endTimeUnixNano") == std::to_string(sent.end_ns));
  const json status = got.value("status", json::object());
  CHECK(status.value("code", 0) == static_cast<int>(sent.status));
  CHECK(status.value("message", "") == sent.status_message);

  const auto attributes = got.value("attributes", json::array());
  REQUIRE(attributes.size() == sent.attributes.size());
  for (std::size_t i = 0; i < attributes.size(); ++i) {
    const auto& a = attributes[i];
    const auto& want = sent.attributes[i];
    INFO("attribute " << want.key);
    CHECK(a.at("key") == std::string(want.key));
    const auto& v = a.at("value");
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::string>) {
            CHECK(v.at("value") == "stringValue");
            CHECK(v.at("stringValue") == x);
          } else if constexpr (std::is_same_v<T, std::int64_t>) {
            CHECK(v.at("value") == "intValue");
            CHECK(v.at("intValue") == std::to_string(x));
          } else if constexpr (std::is_same_v<T, double>) {
            CHECK(v.at("value") == "doubleValue");
            CHECK(v.at("doubleValue").template get<double>() == x);
          } else {
            CHECK(v.at("value") == "boolValue");
            CHECK(v.at("boolValue") == x);
          }
        },
        want.value);
  }
}

// The attributes of a decoded span: key -> {oneof case, value}.
std::map<std::string, std::pair<std::string, json>> attributes_of(const json& got) {
  std::map<std::string, std::pair<std::string, json>> out;
  for (const auto& kv : got.value("attributes", json::array())) {
    const auto& v = kv.at("value");
    const std::string which = v.at("value");
    out[kv.at("key")] = {which, v.at(which)};
  }
  return out;
}

// The one ResourceSpans and ScopeSpans of an export, checked; returns its spans.
json spans_of(const json& request) {
  INFO(request.dump());
  CHECK(request.at("method") == "POST");
  CHECK(request.at("path") == "/v1/traces");
  CHECK(request.at("content_type") == "application/x-protobuf");
  CHECK(request.at("verify_error").is_null());
  CHECK(request.at("reencoded_identical") == true);  // protobufjs writes the same bytes
  const auto& resource_spans = request.at("request").at("resourceSpans");
  REQUIRE(resource_spans.size() == 1);
  const auto& resource = resource_spans[0].at("resource").at("attributes");
  REQUIRE(resource.size() == 1);
  CHECK(resource[0].at("key") == "service.name");
  CHECK(resource[0].at("value").at("stringValue") == "gateway-under-test");
  const auto& scope_spans = resource_spans[0].at("scopeSpans");
  REQUIRE(scope_spans.size() == 1);
  CHECK(scope_spans[0].at("scope").at("name") == "gateway");
  CHECK(scope_spans[0].at("scope").at("version") == GATEWAY_VERSION);
  return scope_spans[0].at("spans");
}

}  // namespace

TEST_CASE("OTLP export: spans decoded by the official protobuf definitions", "[otlp-receiver]") {
  test_support::otlp_receiver receiver(RECEIVER_DIR);
  auto settings = settings_for(receiver.endpoint());
  settings.max_batch_spans = 4;
  tracer t(settings);

  // A full batch (4 spans) is exported at once.
  const trace_record retried = retried_request(t);
  t.submit(trace_record(retried), false);
  REQUIRE(eventually([&] { return t.exported() == 4; }));

  // Not sampled at the head (ratio 0, no parent) but failed: kept, and sent by the flush at shutdown.
  auto failed = begin_trace("", "ignored=without-traceparent", 0.0, unix_nanos_now());
  REQUIRE_FALSE(failed.sampled);
  failed.server.name = "GET /orders";
  failed.server.end_ns = failed.server.start_ns + 1;
  failed.server.fail("deadline exceeded");
  failed.server.set(attr::http_response_status_code, 504);
  const trace_record sent_failed = failed;
  t.submit(std::move(failed), true);
  t.shutdown(clock::now() + 5s);
  CHECK(t.exported() == 5);
  CHECK(t.dropped() == 0);
  CHECK(t.export_failures() == 0);

  const auto requests = receiver.requests();
  INFO(receiver.errors());
  REQUIRE(requests.size() == 2);
  CHECK(requests[1].at("client_port") == requests[0].at("client_port"));  // the connection was kept

  const json first = spans_of(requests[0]);
  REQUIRE(first.size() == 4);
  check_span(first[0], retried, retried.server);
  for (std::size_t i = 0; i < 3; ++i) check_span(first[i + 1], retried, retried.spans[i]);
  // The same facts spelled out, as a reader of the collector's data sees them.
  CHECK(first[0].at("traceId") == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(first[0].at("parentSpanId") == "00f067aa0ba902b7");
  CHECK(first[0].at("traceState") == "vendor=opaque,other=1");
  CHECK(first[0].at("kind") == 2);  // SPAN_KIND_SERVER
  CHECK(first[0].at("startTimeUnixNano") == "1700000000123456789");
  CHECK(first[0].at("status").at("code") == 1);  // STATUS_CODE_OK
  for (std::size_t i = 1; i < 4; ++i) {
    CHECK(first[i].at("kind") == 3);  // SPAN_KIND_CLIENT
    CHECK(first[i].at("parentSpanId") == first[0].at("spanId"));
    CHECK(first[i].at("spanId") != first[0].at("spanId"));
  }
  CHECK(first[1].at("status").at("code") == 2);  // STATUS_CODE_ERROR
  CHECK(first[1].at("status").at("message") == "connect: Connection refused");
  CHECK_FALSE(first[3].contains("status"));  // unset
  const auto attributes = attributes_of(first[0]);
  CHECK(attributes.at("test.int_max") == std::pair<std::string, json>("intValue", "9223372036854775807"));
  CHECK(attributes.at("test.int_min") == std::pair<std::string, json>("intValue", "-9223372036854775808"));
  CHECK(attributes.at("test.unicode").second == "h\u00e9llo \u2713");
  CHECK(attributes.at("gateway.degraded") == std::pair<std::string, json>("boolValue", false));
  CHECK(attributes_of(first[1]).at("url.full").second == "http://10.0.0.7:8080/users/7?token=REDACTED&v=2");
  CHECK(attributes_of(first[2]).at("gateway.sql.semaphore_wait_ms") ==
        std::pair<std::string, json>("doubleValue", 1.25));

  const json second = spans_of(requests[1]);
  REQUIRE(second.size() == 1);
  check_span(second[0], sent_failed, sent_failed.server);
  CHECK_FALSE(second[0].contains("parentSpanId"));  // a new trace
  CHECK_FALSE(second[0].contains("traceState"));    // dropped with the missing traceparent
  CHECK(second[0].at("status").at("message") == "deadline exceeded");
}

TEST_CASE("OTLP export: a kept connection the collector closed is replaced", "[otlp-receiver]") {
  test_support::otlp_receiver receiver(RECEIVER_DIR, true);  // closes each connection after answering
  auto settings = settings_for(receiver.endpoint());
  settings.max_batch_spans = 2;
  tracer t(settings);
  t.submit(small_record(), false);
  REQUIRE(eventually([&] { return t.exported() == 2; }));
  // The next export finds its kept connection closed (the write may succeed, the read meets the end of
  // stream or a reset) and sends again on a new one, within the same deadline.
  t.submit(small_record(), false);
  REQUIRE(eventually([&] { return t.exported() == 4; }));
  t.shutdown(clock::now() + 5s);
  CHECK(t.export_failures() == 0);
  CHECK(t.dropped() == 0);
  const auto requests = receiver.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[1].at("client_port") != requests[0].at("client_port"));
}

TEST_CASE("OTLP export: an unreachable collector costs only dropped spans") {
  test_support::silent_collector closed(false);
  auto settings = settings_for(closed.endpoint());
  settings.max_queue_spans = 8;
  settings.max_batch_spans = 2;
  settings.max_backoff = 50ms;
  tracer t(settings);
  for (int i = 0; i < 20; ++i) t.submit(small_record(), false);
  REQUIRE(eventually([&] { return t.export_failures() >= 1; }));
  const auto deadline = clock::now() + 2s;
  t.shutdown(deadline);
  CHECK(clock::now() < deadline + 500ms);
  CHECK(t.exported() == 0);
  CHECK(t.dropped() == 40);  // every span: refused at the queue, in a failed export, or left at shutdown
  CHECK(t.queued_spans() == 0);
}

TEST_CASE("OTLP export: a hung collector costs only dropped spans and shutdown keeps its deadline") {
  test_support::silent_collector hung(true);
  auto settings = settings_for(hung.endpoint());
  settings.max_batch_spans = 2;
  settings.max_backoff = microseconds::zero();

  SECTION("export_timeout bounds connect write and read") {
    settings.export_timeout = 300ms;
    tracer t(settings);
    const auto start = clock::now();
    t.submit(small_record(), false);  // a full batch: exported at once
    REQUIRE(eventually([&] { return t.export_failures() == 1; }));
    const auto took = clock::now() - start;
    CHECK(took >= 250ms);
    CHECK(took < 3s);
    CHECK(t.dropped() == 2);
    t.shutdown(clock::now() + 1s);
    CHECK(t.exported() == 0);
  }

  SECTION("submit never waits for an export and shutdown cuts one short") {
    settings.export_timeout = 30s;
    settings.max_queue_spans = 64;
    tracer t(settings);
    t.submit(small_record(), false);
    REQUIRE(eventually([&] { return t.queued_spans() == 0; }));  // taken: its POST now hangs
    const auto before = clock::now();
    for (int i = 0; i < 1000; ++i) t.submit(small_record(), false);
    CHECK(clock::now() - before < 1s);
    CHECK(t.queued_spans() == 64);
    CHECK(t.dropped() == 2000 - 64);
    const auto deadline = clock::now() + 300ms;
    t.shutdown(deadline);
    CHECK(clock::now() < deadline + 500ms);  // the deadline, plus a moment to abort the POST in progress
    CHECK(t.exported() == 0);
    CHECK(t.export_failures() == 1);
    CHECK(t.dropped() == 2002);  // the hung batch, the queue and the refused: every span submitted
  }
}
