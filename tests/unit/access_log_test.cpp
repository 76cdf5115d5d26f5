// What the access log and spans show of a request: targets with secret query values redacted, the client
// behind trusted proxies, the line in both formats, and the batching writer.

#include "gateway/codec/ip_network.hpp"
#include "gateway/observe/logging.hpp"
#include "gateway/trace/redaction.hpp"

#include <unistd.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sstream>
#include <thread>
#include <vector>

using namespace gateway;

namespace {

std::string redacted(std::string_view target, std::size_t max = 2048) {
  std::string out;
  append_redacted_target(out, target, max);
  return out;
}

}  // namespace

TEST_CASE("redaction: secret query values are replaced and everything else kept as it came", "[redaction]") {
  CHECK(redacted("/api/offer/aggregate") == "/api/offer/aggregate");
  CHECK(redacted("/api/offer/aggregate?sku=A1") == "/api/offer/aggregate?sku=A1");
  CHECK(redacted("/a?sku=A1&api_key=s3cr3t&x=1") == "/a?sku=A1&api_key=REDACTED&x=1");
  CHECK(redacted("/a?access_token=abc") == "/a?access_token=REDACTED");
  CHECK(redacted("/a?Signature=abc&X-Goog-Signature=def&sig=1&code=2") ==
        "/a?Signature=REDACTED&X-Goog-Signature=REDACTED&sig=REDACTED&code=REDACTED");
  CHECK(redacted("/a?AWSAccessKeyId=AKIA&password=p&session_id=9") ==
        "/a?AWSAccessKeyId=REDACTED&password=REDACTED&session_id=REDACTED");
  // A percent-encoded name is judged decoded; a name with no value has nothing to hide.
  CHECK(redacted("/a?%74oken=abc&token") == "/a?%74oken=REDACTED&token");
  CHECK(redacted("/a?&&sku=1&") == "/a?&&sku=1&");
  CHECK(redacted("/a?") == "/a?");
  CHECK(redacted("/a?postal_code=1&zip=2") == "/a?postal_code=1&zip=2");
}

TEST_CASE("redaction: a long target is cut and marked", "[redaction]") {
  const std::string path = "/" + std::string(100, 'p');
  CHECK(redacted(path, 20) == path.substr(0, 20) + "...");
  CHECK(redacted("/a?token=" + std::string(100, 's'), 20) == "/a?token=REDACTED");
  const auto cut = redacted("/a?x=" + std::string(100, 'v') + "&token=secret", 30);
  CHECK(cut.size() == 33);
  CHECK(cut.find("secret") == std::string::npos);
}

TEST_CASE("forwarded client: the rightmost address that is not a trusted proxy", "[redaction]") {
  std::string error;
  const std::vector<ip_network> trusted = {*ip_network::parse("10.0.0.0/8", error),
                                           *ip_network::parse("::1", error)};
  CHECK(forwarded_client("203.0.113.9", trusted) == "203.0.113.9");
  CHECK(forwarded_client("198.51.100.7, 203.0.113.9, 10.1.2.3", trusted) == "203.0.113.9");
  CHECK(forwarded_client("198.51.100.7,203.0.113.9 ,\t10.1.2.3", {}) == "10.1.2.3");
  CHECK(forwarded_client("10.9.9.9, ::1", trusted) == "10.9.9.9");  // all ours: the leftmost
  CHECK(forwarded_client("2001:db8::1, ::1", trusted) == "2001:db8::1");
  // Nothing left of a bad entry is believed.
  CHECK(forwarded_client("198.51.100.7, unknown, 10.1.2.3", trusted) == "10.1.2.3");
  CHECK(forwarded_client("198.51.100.7, , 10.1.2.3", trusted) == "10.1.2.3");
  CHECK(forwarded_client("garbage", trusted).empty());
  CHECK(forwarded_client("", trusted).empty());
  CHECK(forwarded_client("1.2.3.4:80", trusted).empty());
}

TEST_CASE("access line: JSON escapes what the client sent and lists each call", "[access_log]") {
  aggregate_route route;
  route.calls.resize(2);
  route.calls[0].name = "pricing";
  route.calls[1].name = "coupon";
  const call_brief calls[] = {
      {static_cast<std::uint8_t>(outcome_label_index(call_outcome::ok, call_error::none)), 200, 12345},
      {static_cast<std::uint8_t>(outcome_label_index(call_outcome::timeout, call_error::none)), 0, 150000}};
  access_entry e;
  e.time = std::chrono::system_clock::time_point(std::chrono::milliseconds(1764633600007));
  e.request_id = "r-1";
  e.method = "GET";
  e.route = "/api/x/{id}";
  e.target = "/api/x/7?session=abc&q=1";
  e.status = 200;
  e.duration_ms = 150.0004;
  e.degraded = "coupon";
  e.bytes = 42;
  e.client = "203.0.113.9";
  e.proxy = "127.0.0.1:5000";
  e.user_agent = "ua \"with\" quotes\n";
  e.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  e.calls = calls;
  e.calls_of = &route;
  const auto json = format_access_line(e, log_format::json);
  CHECK(
      json ==
      R"({"time":"2025-12-02T00:00:00.007Z","request_id":"r-1","method":"GET","route":"/api/x/{id}",)"
      R"("path":"/api/x/7?session=REDACTED&q=1","status":200,"duration_ms":150.000,"degraded":["coupon"],)"
      R"("bytes":42,"client":"203.0.113.9","proxy":"127.0.0.1:5000","user_agent":"ua \"with\" quotes\n",)"
      R"("trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","calls":[{"name":"pricing","outcome":"ok","status":200,)"
      R"("ms":12.345},{"name":"coupon","outcome":"timeout","status":0,"ms":150.000}]})");
  const auto text = format_access_line(e, log_format::text);
  CHECK(text ==
        "2025-12-02T00:00:00.007Z r-1 GET /api/x/{id} 200 150.000ms degraded=coupon bytes=42 "
        "client=203.0.113.9 "
        "proxy=127.0.0.1:5000 path=/api/x/7?session=REDACTED&q=1 ua=\"ua \\\"with\\\" quotes\\n\" "
        "trace=4bf92f3577b34da6a3ce929d0e0e4736 calls=pricing:ok:200:12.345ms,coupon:timeout:0:150.000ms");
}

TEST_CASE("access line: a call answered from the cache is marked cached with its age", "[access_log]") {
  aggregate_route route;
  route.calls.resize(1);
  route.calls[0].name = "pricing";
  const call_brief calls[] = {
      {static_cast<std::uint8_t>(outcome_label_index(call_outcome::ok, call_error::none)), 200, 7, true, 42}};
  access_entry e;
  e.time = std::chrono::system_clock::time_point(std::chrono::milliseconds(1764633600007));
  e.request_id = "r-2";
  e.method = "GET";
  e.route = "/r";
  e.target = "/r";
  e.status = 200;
  e.client = "203.0.113.9";
  e.calls = calls;
  e.calls_of = &route;
  const auto json = format_access_line(e, log_format::json);
  CHECK(json.find(R"("calls":[{"name":"pricing","outcome":"ok","cached":true,"age_s":42,"status":200,)"
                  R"("ms":0.007}])") != std::string::npos);
  CHECK(nlohmann::json::parse(json)["calls"][0]["cached"] == true);
  const auto text = format_access_line(e, log_format::text);
  CHECK(text.find(" calls=pricing:ok:200:0.007ms:cached:42s") != std::string::npos);
}

TEST_CASE("access log: lines from several threads all reach the output whole at the end", "[access_log]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::string out;
  std::thread reader([&] {
    char buffer[65536];
    for (;;) {
      const auto n = ::read(fds[0], buffer, sizeof buffer);
      if (n <= 0) return;
      out.append(buffer, static_cast<std::size_t>(n));
    }
  });
  constexpr int writers = 3;
  constexpr int per_writer = 5000;
  {
    access_log log(log_format::json, writers, fds[1], std::chrono::milliseconds(5));
    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w) {
      threads.emplace_back([&log, w] {
        for (int i = 0; i < per_writer; ++i) {
          const auto id = std::to_string(w) + "-" + std::to_string(i);
          access_entry e;
          e.request_id = id;
          e.method = "GET";
          e.route = "/r";
          e.target = "/r";
          log.write(static_cast<std::size_t>(w), e);
        }
      });
    }
    for (auto& t : threads) t.join();
    CHECK(log.dropped() == 0);
  }  // the destructor writes what is left
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  // Each writer's lines in its own order, none lost, none cut.
  std::vector<int> next(writers, 0);
  std::istringstream lines(out);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    const auto start = line.find("\"request_id\":\"") + 14;
    const auto dash = line.find('-', start);
    const int w = std::stoi(line.substr(start, dash - start));
    const int i = std::stoi(line.substr(dash + 1));
    REQUIRE(w < writers);
    CHECK(i == next[static_cast<std::size_t>(w)]);
    next[static_cast<std::size_t>(w)] = i + 1;
    ++count;
  }
  CHECK(count == writers * per_writer);
}

TEST_CASE("access log: an output nobody reads costs dropped lines and the writer never waits for long",
          "[access_log]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const auto started = std::chrono::steady_clock::now();
  std::uint64_t dropped = 0;
  {
    access_log log(log_format::json, 1, fds[1], std::chrono::milliseconds(5));
    access_entry e;
    e.request_id = "x";
    e.target = "/";
    const std::string long_agent(200, 'a');
    e.user_agent = long_agent;
    for (int i = 0; i < 20000; ++i) log.write(0, e);  // ~6 MB into a 64 KiB pipe
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    dropped = log.dropped();
  }
  const auto took = std::chrono::steady_clock::now() - started;
  ::close(fds[1]);
  ::close(fds[0]);
  CHECK(dropped > 0);
  CHECK(took < std::chrono::seconds(3));
}

TEST_CASE("access line: the longest escapes fit and the line stays one JSON object", "[access_log]") {
  // Every text field made of bytes that escape to the most (\u00XX; invalid UTF-8 to U+FFFD).
  std::string nasty;
  for (int i = 0; i < 600; ++i) nasty += static_cast<char>(i % 3 == 0 ? 0x01 : i % 3 == 1 ? '"' : 0xff);
  aggregate_route route;
  route.calls.resize(40);
  for (auto& call : route.calls) call.name = nasty.substr(0, 64);
  std::vector<call_brief> calls(route.calls.size(), call_brief{0, 999, 0xffffffffu});
  access_entry e;
  e.request_id = nasty;
  e.method = nasty;
  e.route = nasty;
  const std::string target = "/" + nasty;
  e.target = target;
  e.degraded = "a,\x01\x01,\"";
  e.client = nasty;
  e.proxy = nasty;
  e.user_agent = nasty;
  e.trace_id = nasty;
  e.status = 999;
  e.duration_ms = 9.99e11;
  e.bytes = ~std::size_t{0};
  e.calls = calls;
  e.calls_of = &route;
  std::string out = "prefix ";
  time_stamp_cache stamps;
  append_access_line(out, e, log_format::json, stamps);
  REQUIRE(out.rfind("prefix ", 0) == 0);
  const auto line = out.substr(7);
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.back() == '}');
  // Parsed by an independent JSON reader, with every field where it belongs.
  const auto j = nlohmann::json::parse(line, nullptr, false);
  REQUIRE(j.is_object());
  CHECK(j["calls"].size() == 40);
  CHECK(j["bytes"] == ~std::uint64_t{0});
  CHECK(j["degraded"].size() == 3);
}
