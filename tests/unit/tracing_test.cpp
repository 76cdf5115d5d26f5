// Trace context, sampling, the tracer's queue, url.full and a call's spans (gateway/observe/,
// downstream/call_trace.hpp). The export over HTTP and its encoding against the official OTLP definitions
// are in tests/tracing/, the spans of the running gateway in tests/tracing/gateway_trace_test.cpp.

#include "gateway/observe/tracing.hpp"
#include "gateway/downstream/call_trace.hpp"
#include "gateway/observe/trace_queue.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <stdexcept>
#include <thread>

using namespace gateway;
using namespace std::chrono_literals;

namespace {

constexpr std::string_view valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

trace_id trace_with_random_part(std::uint64_t random56) {
  trace_id id{};
  id[0] = 0xaa;  // the leftmost bytes play no part in the decision
  for (int i = 15; i >= 9; --i, random56 >>= 8) id[static_cast<std::size_t>(i)] = random56 & 0xff;
  return id;
}

trace_record record_with_spans(std::size_t spans) {
  trace_record r;
  r.trace = new_trace_id();
  r.server.id = new_span_id();
  r.sampled = true;
  for (std::size_t i = 1; i < spans; ++i) r.add_client("call", 0);
  return r;
}

// Settings whose export thread never sends before shutdown (no collector listens at the endpoint).
tracing_settings quiet_settings(std::size_t max_queue, std::size_t max_batch) {
  tracing_settings s;
  s.enabled = true;
  s.endpoint = "http://127.0.0.1:9/v1/traces";
  s.max_queue_spans = max_queue;
  s.max_batch_spans = max_batch;
  s.batch_delay = 1h;
  return s;
}

}  // namespace

TEST_CASE("traceparent: a valid field gives its ids and flags") {
  const auto tp = parse_traceparent(valid);
  REQUIRE(tp);
  CHECK(to_hex(tp->trace) == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(to_hex(tp->parent) == "00f067aa0ba902b7");
  CHECK(tp->flags == 0x01);
  CHECK(tp->sampled());
  const auto unsampled = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  REQUIRE(unsampled);
  CHECK_FALSE(unsampled->sampled());
  // Flags other than "sampled" are kept (and ignored).
  const auto other = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03");
  REQUIRE(other);
  CHECK(other->flags == 0x03);
  CHECK(other->sampled());
}

TEST_CASE("traceparent: invalid forms are refused") {
  const char* invalid[] = {
      "",
      "00",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",    // short flags
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",  // version 00, more after
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",  // version 00, more after
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   // uppercase trace id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",   // uppercase parent id
      "0A-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // uppercase version
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0G",   // not hex
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   // all-zero trace id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   // all-zero parent id
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // version ff
      "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // separator
      "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",   // misplaced dash
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ",  // trailing space
      " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // leading space
      "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",  // later version, no dash
  };
  for (const char* text : invalid) {
    INFO(text);
    CHECK_FALSE(parse_traceparent(text));
  }
  CHECK_FALSE(parse_traceparent(std::string_view(valid.data(), valid.size() - 1)));
  CHECK_FALSE(parse_traceparent(std::string(valid) + std::string(1, '\0')));
}

TEST_CASE("traceparent: a later version is read by its version 00 prefix") {
  const auto v1 =
      parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-later");
  REQUIRE(v1);
  CHECK(to_hex(v1->parent) == "00f067aa0ba902b7");
  CHECK(parse_traceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"));
}

TEST_CASE("traceparent: the outgoing field parses back to the same ids") {
  const auto trace = new_trace_id();
  const auto span = new_span_id();
  for (const bool sampled : {true, false}) {
    const auto text = format_traceparent(trace, span, sampled);
    CHECK(text.view().size() == 55);
    const auto back = parse_traceparent(text.view());
    REQUIRE(back);
    CHECK(back->trace == trace);
    CHECK(back->parent == span);
    CHECK(back->sampled() == sampled);
  }
  const auto parsed = parse_traceparent(valid);
  CHECK(format_traceparent(parsed->trace, parsed->parent, true).view() == valid);
}

TEST_CASE("tracestate: kept as received within its limits") {
  CHECK(accepted_tracestate("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE") ==
        "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
  CHECK(accepted_tracestate("a=1 ,\tb=2") == "a=1 ,\tb=2");
  CHECK(accepted_tracestate(std::string(512, 'a')) == std::string(512, 'a'));
  CHECK(accepted_tracestate(std::string(513, 'a')).empty());
  CHECK(accepted_tracestate("a=1\r\nb=2").empty());
  CHECK(accepted_tracestate("a=\xc3\xa9").empty());
}

TEST_CASE("trace ids: random and never all-zero") {
  std::set<trace_id> traces;
  std::set<span_id> spans;
  for (int i = 0; i < 1000; ++i) {
    const auto t = new_trace_id();
    const auto s = new_span_id();
    CHECK_FALSE(is_zero(t));
    CHECK_FALSE(is_zero(s));
    traces.insert(t);
    spans.insert(s);
  }
  CHECK(traces.size() == 1000);
  CHECK(spans.size() == 1000);
  // Another thread has a generator of its own, seeded apart.
  std::set<span_id> other;
  std::thread([&] {
    for (int i = 0; i < 1000; ++i) other.insert(new_span_id());
  }).join();
  for (const auto& s : other) CHECK(spans.count(s) == 0);
  CHECK(to_hex(span_id{0x00, 0x01, 0x0a, 0xff, 0x10, 0x20, 0x30, 0x40}) == "00010aff10203040");
}

TEST_CASE("sampling: ratio 0 keeps no new trace and ratio 1 keeps all") {
  for (int i = 0; i < 200; ++i) {
    const auto id = new_trace_id();
    CHECK_FALSE(head_sampled(std::nullopt, id, 0.0));
    CHECK(head_sampled(std::nullopt, id, 1.0));
  }
  CHECK_FALSE(head_sampled(std::nullopt, trace_with_random_part(0), 0.0));
  CHECK(head_sampled(std::nullopt, trace_with_random_part((std::uint64_t{1} << 56) - 1), 1.0));
}

TEST_CASE("sampling: the trace id decides at a ratio so that services agree") {
  // Below ratio * 2^56 is sampled.
  const std::uint64_t quarter = std::uint64_t{1} << 54;
  CHECK(head_sampled(std::nullopt, trace_with_random_part(0), 0.25));
  CHECK(head_sampled(std::nullopt, trace_with_random_part(quarter - 1), 0.25));
  CHECK_FALSE(head_sampled(std::nullopt, trace_with_random_part(quarter), 0.25));
  CHECK_FALSE(head_sampled(std::nullopt, trace_with_random_part((std::uint64_t{1} << 56) - 1), 0.999));
  // The same id, the same answer; about the ratio of random ids.
  int kept = 0;
  for (int i = 0; i < 10000; ++i) {
    const auto id = new_trace_id();
    const bool first = head_sampled(std::nullopt, id, 0.3);
    CHECK(head_sampled(std::nullopt, id, 0.3) == first);
    kept += first;
  }
  CHECK(kept > 2700);
  CHECK(kept < 3300);
}

TEST_CASE("sampling: the parent's sampled flag is followed whatever the ratio") {
  const auto sampled = parse_traceparent(valid);
  const auto unsampled = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  for (const double ratio : {0.0, 0.5, 1.0}) {
    CHECK(head_sampled(sampled, sampled->trace, ratio));
    CHECK_FALSE(head_sampled(unsampled, unsampled->trace, ratio));
  }
}

TEST_CASE("sampling: a degraded or failed request is always kept") {
  auto r = begin_trace("", "", 0.0, 1);
  CHECK_FALSE(r.sampled);
  CHECK_FALSE(tracer::keep(r, false));
  CHECK(tracer::keep(r, true));
  auto p = begin_trace("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "", 1.0, 1);
  CHECK_FALSE(p.sampled);
  CHECK(tracer::keep(p, true));
  // And the tracer queues it.
  tracer t(quiet_settings(16, 16));
  t.submit(std::move(r), false);
  CHECK(t.queued_spans() == 0);
  t.submit(std::move(p), true);
  CHECK(t.queued_spans() == 1);
  CHECK(t.dropped() == 0);
}

TEST_CASE("begin_trace: continues the caller's trace or starts one") {
  const auto r = begin_trace(valid, "k=v", 0.0, 42);
  CHECK(to_hex(r.trace) == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(to_hex(r.server.parent) == "00f067aa0ba902b7");
  CHECK(r.server.kind == span_kind::server);
  CHECK(r.server.start_ns == 42);
  CHECK_FALSE(is_zero(r.server.id));
  CHECK(r.tracestate == "k=v");
  CHECK(r.sampled);  // the parent's flag, not the ratio

  auto fresh = begin_trace("00-zz", "k=v", 1.0, 7);
  CHECK(is_zero(fresh.server.parent));
  CHECK_FALSE(is_zero(fresh.trace));
  CHECK(fresh.tracestate.empty());  // no valid traceparent: the tracestate goes too
  CHECK(fresh.sampled);

  span& client = fresh.add_client("users", 8);
  CHECK(client.parent == fresh.server.id);
  CHECK(client.kind == span_kind::client);
  CHECK(client.id != fresh.server.id);
  const auto out = parse_traceparent(fresh.outgoing(client).view());
  REQUIRE(out);
  CHECK(out->trace == fresh.trace);
  CHECK(out->parent == client.id);
  CHECK(out->sampled());
}

TEST_CASE("span attributes: every value type and the literal pitfall") {
  span s;
  s.set(span_attributes::http_request_method, "GET");  // a literal stays text, not bool
  s.set(span_attributes::server_port, 8080);
  s.set(span_attributes::semaphore_wait_ms, 1.5);
  s.set(span_attributes::degraded, true);
  s.set(span_attributes::http_response_status_code, std::uint16_t{503});
  REQUIRE(s.attributes.size() == 5);
  CHECK(std::get<std::string>(s.attributes[0].value) == "GET");
  CHECK(std::get<std::int64_t>(s.attributes[1].value) == 8080);
  CHECK(std::get<double>(s.attributes[2].value) == 1.5);
  CHECK(std::get<bool>(s.attributes[3].value));
  CHECK(std::get<std::int64_t>(s.attributes[4].value) == 503);
}

TEST_CASE("trace queue: bounded in spans and drops what does not fit") {
  trace_queue q(10);
  auto three = record_with_spans(3);
  CHECK(q.try_push(three));
  auto six = record_with_spans(6);
  CHECK(q.try_push(six));
  auto two = record_with_spans(2);
  CHECK_FALSE(q.try_push(two));  // 11 > 10
  CHECK(two.span_count() == 2);  // left as it was
  auto one = record_with_spans(1);
  CHECK(q.try_push(one));
  CHECK(q.spans() == 10);
  auto too_big = record_with_spans(11);
  CHECK_FALSE(q.try_push(too_big));

  std::vector<trace_record> out;
  CHECK(q.pop(out, 4) == 3);  // the six waits for the next batch
  REQUIRE(out.size() == 1);
  CHECK(out[0].span_count() == 3);
  out.clear();
  CHECK(q.pop(out, 4) == 6);  // a record larger than the batch still goes, alone
  CHECK(q.pop(out, 4) == 1);
  CHECK(q.pop(out, 4) == 0);
  CHECK(q.spans() == 0);
  CHECK(q.try_push(two));
}

TEST_CASE("trace queue: many producers lose nothing below the bound") {
  trace_queue q(64);
  std::atomic<std::size_t> pushed{0}, refused{0};
  std::atomic<bool> done{false};
  std::size_t popped = 0;
  std::thread consumer([&] {
    std::vector<trace_record> out;
    while (!done.load() || q.spans() > 0) {
      popped += q.pop(out, 16);
      out.clear();
    }
  });
  std::vector<std::thread> producers;
  for (int t = 0; t < 4; ++t) {
    producers.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        auto r = record_with_spans(1 + static_cast<std::size_t>(i % 3));
        const auto n = r.span_count();
        (q.try_push(r) ? pushed : refused) += n;
      }
    });
  }
  for (auto& p : producers) p.join();
  done = true;
  consumer.join();
  CHECK(popped == pushed.load());
  CHECK(pushed + refused == 4 * (20000 / 3 * 6 + 3));  // 1 + 2 + 3 spans per three records, 20000 = 3k + 2
}

TEST_CASE("tracer: a full queue drops and counts spans") {
  tracer t(quiet_settings(10, 10));
  for (int i = 0; i < 5; ++i) t.submit(record_with_spans(3), false);
  CHECK(t.queued_spans() == 9);
  CHECK(t.dropped() == 6);
  t.shutdown(clock::now());  // no time to send: the queued spans are dropped too
  CHECK(t.dropped() == 15);
  CHECK(t.exported() == 0);
  t.submit(record_with_spans(2), false);  // after shutdown
  CHECK(t.dropped() == 17);
}

TEST_CASE("tracer: disabled it ignores submits") {
  tracing_settings s;
  tracer t(s);
  CHECK_FALSE(t.enabled());
  t.submit(record_with_spans(2), true);
  CHECK(t.dropped() == 0);
  CHECK(t.queued_spans() == 0);
  t.shutdown(clock::now());
}

TEST_CASE("tracer: settings are checked") {
  const auto refused = [](auto change) {
    tracing_settings s;
    change(s);
    CHECK_THROWS_AS(check_tracing_settings(s), std::invalid_argument);
  };
  CHECK_NOTHROW(check_tracing_settings(tracing_settings{}));
  refused([](tracing_settings& s) { s.sample_ratio = 1.5; });
  refused([](tracing_settings& s) { s.sample_ratio = -0.1; });
  refused([](tracing_settings& s) { s.sample_ratio = std::nan(""); });
  refused([](tracing_settings& s) { s.endpoint = "https://collector:4318/v1/traces"; });
  refused([](tracing_settings& s) { s.endpoint = "collector:4318"; });
  refused([](tracing_settings& s) { s.endpoint = "http:///v1/traces"; });
  refused([](tracing_settings& s) { s.max_batch_spans = 0; });
  refused([](tracing_settings& s) { s.max_queue_spans = 100; });  // below max_batch_spans 512
  refused([](tracing_settings& s) { s.export_timeout = microseconds::zero(); });
  refused([](tracing_settings& s) { s.service_name.clear(); });
  CHECK_NOTHROW(check_tracing_settings([] {
    tracing_settings s;
    s.endpoint = "http://[::1]:4318";
    return s;
  }()));
}

TEST_CASE("url.full: secret query values are redacted, the rest kept as it came") {
  using span_attributes::full_url;
  CHECK(full_url("http://users:8080", "/v1/users/7?token=abc&expand&sort=name") ==
        "http://users:8080/v1/users/7?token=REDACTED&expand&sort=name");
  CHECK(full_url("https://users", "/v1/users") == "https://users/v1/users");
  CHECK(full_url("http://users", "/v1?api_key=k&X-Goog-Signature=s&code=c&id=9") ==
        "http://users/v1?api_key=REDACTED&X-Goog-Signature=REDACTED&code=REDACTED&id=9");
  CHECK(full_url("http://[::1]:81", "/v1?a%20b=c%20d&&e=f") == "http://[::1]:81/v1?a%20b=c%20d&&e=f");
}

TEST_CASE("call trace: a span per call, a client span per attempt under it, each with its traceparent") {
  auto record = begin_trace(valid, "", 0.0, 1'000);
  call_settings call;
  call.name = "users";
  call.method = "GET";
  const auto now = gateway::clock::now();
  call_trace trace(record, call, now, 5'000'000);
  REQUIRE(record.spans.size() == 1);
  CHECK(record.spans[0].parent == record.server.id);
  CHECK(record.spans[0].kind == span_kind::internal);
  const auto own = parse_traceparent(trace.traceparent());
  REQUIRE(own);
  CHECK(own->parent == record.spans[0].id);

  trace.set_url("http://users:8080/v1/users?token=REDACTED");
  const boost::asio::ip::tcp::endpoint to(boost::asio::ip::make_address("10.0.0.7"), 8080);
  traceparent_text first_sent;
  traceparent_text hedge_sent;
  traceparent_text retry_sent;
  const auto first = trace.begin_attempt(now + 1ms, false, to, first_sent);
  const auto hedge = trace.begin_attempt(now + 2ms, true, to, hedge_sent);
  call_result failed;
  failed.outcome = call_outcome::error;
  failed.error = call_error::status_5xx;
  failed.detail = "status 503";
  failed.status = 503;
  trace.end_attempt(first, now + 3ms, &failed);
  const auto retry = trace.begin_attempt(now + 4ms, false, to, retry_sent);
  call_result answered;
  answered.outcome = call_outcome::ok;
  answered.status = 200;
  answered.latency = 6ms;
  trace.end_attempt(retry, now + 6ms, &answered);
  trace.end_attempt(hedge, now + 7ms, nullptr);  // still running when the call reported
  downstream_settings users;
  users.name = "users-service";
  trace.end(answered, users, nullptr);

  REQUIRE(record.spans.size() == 4);
  const auto& call_span = record.spans[0];
  CHECK(call_span.end_ns == 5'000'000 + 7'000'000);  // not before its last attempt ended
  CHECK(call_span.status == span_status::ok);
  const auto attributes = [](const span& s) {
    std::map<std::string, attribute_value> out;
    for (const auto& a : s.attributes) out[std::string(a.key)] = a.value;
    return out;
  };
  CHECK(std::get<std::string>(attributes(call_span).at("gateway.call")) == "users");
  CHECK(std::get<std::string>(attributes(call_span).at("gateway.downstream")) == "users-service");
  const traceparent_text* sent[] = {&first_sent, &hedge_sent, &retry_sent};
  for (std::size_t i = 0; i < 3; ++i) {
    INFO("attempt " << i + 1);
    const auto& s = record.spans[i + 1];
    CHECK(s.parent == call_span.id);
    CHECK(s.kind == span_kind::client);
    CHECK(s.name == "GET");
    const auto out = parse_traceparent(sent[i]->view());
    REQUIRE(out);
    CHECK(out->trace == record.trace);
    CHECK(out->parent == s.id);
    const auto a = attributes(s);
    CHECK(std::get<std::int64_t>(a.at("gateway.attempt")) == static_cast<std::int64_t>(i + 1));
    CHECK(a.count("http.request.resend_count") == (i == 0 ? 0U : 1U));
    CHECK(a.count("gateway.hedge") == (i == 1 ? 1U : 0U));
    CHECK(std::get<std::string>(a.at("server.address")) == "10.0.0.7");
    CHECK(std::get<std::int64_t>(a.at("server.port")) == 8080);
    CHECK(std::get<std::string>(a.at("url.full")) == "http://users:8080/v1/users?token=REDACTED");
  }
  CHECK(record.spans[1].status == span_status::error);
  CHECK(record.spans[1].status_message == "status 503");
  CHECK(std::get<std::string>(attributes(record.spans[1]).at("gateway.outcome")) == "status_5xx");
  CHECK(record.spans[1].start_ns == 5'000'000 + 1'000'000);
  CHECK(record.spans[1].end_ns == 5'000'000 + 3'000'000);
  CHECK(record.spans[2].status == span_status::unset);  // cancelled: not a failure of its own
  CHECK(std::get<std::string>(attributes(record.spans[2]).at("gateway.outcome")) == "cancelled");
  CHECK(std::get<std::int64_t>(attributes(record.spans[3]).at("http.request.resend_count")) == 2);
  CHECK(record.spans[3].status == span_status::ok);
}

TEST_CASE("call trace: a SQL call's span is the client span, with its database and its permit wait") {
  auto record = begin_trace("", "", 1.0, 1'000);
  call_settings call;
  call.name = "inventory";
  call_trace trace(record, call, gateway::clock::now(), 2'000);
  trace.permit_waited(2500us);
  downstream_settings db;
  db.name = "db";
  db.kind = downstream_kind::sql;
  db.sql.driver = sql_driver::postgres;
  call_result timed_out;
  timed_out.outcome = call_outcome::timeout;
  timed_out.detail = "waiting for a database permit";
  timed_out.contacted = false;
  trace.end(timed_out, db, nullptr);
  REQUIRE(record.spans.size() == 1);
  const auto& s = record.spans[0];
  CHECK(s.kind == span_kind::client);
  CHECK(s.status == span_status::error);
  std::map<std::string, attribute_value> a;
  for (const auto& kv : s.attributes) a[std::string(kv.key)] = kv.value;
  CHECK(std::get<std::string>(a.at("db.system")) == "postgresql");
  CHECK(std::get<double>(a.at("gateway.sql.semaphore_wait_ms")) == 2.5);
  CHECK(std::get<std::string>(a.at("gateway.outcome")) == "timeout");
  CHECK(std::get<bool>(a.at("gateway.degraded")));
}
