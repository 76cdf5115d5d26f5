// The request side of the front door against hostile or uncommon HTTP: answers to HEAD carry no body,
// a transfer coding the gateway cannot frame is refused before its body can pass for another request,
// deadline headers of any size are safe, and a connection that never sends a byte does not keep its slot.

#include "tests/support/offer_checks.hpp"

#include <cstdio>
#include <thread>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

struct gateway_with_mock {
  explicit gateway_with_mock(const std::string& limits = {}) : gw(config(mock, limits)) {}
  static std::string config(mock_downstream& m, const std::string& limits) {
    seed_config cfg{m.url()};
    cfg.limits = limits;
    return cfg.yaml();
  }
  mock_downstream mock{{"--delay", "5ms"}};
  gateway_process gw;
};

// Everything the gateway sends on a connection until it closes it (bounded by `timeout`).
std::string all_received(http_connection& conn, milliseconds timeout = 3s) {
  std::string received;
  conn.wait_closed_by_peer(timeout, &received);
  return received;
}

// The status codes of the responses in `raw`, read head by head with each Content-Length, except that
// the responses listed in `bodiless` (by position) carry none, as answers to HEAD.
std::vector<int> statuses(const std::string& raw, const std::vector<bool>& bodiless = {}) {
  std::vector<int> out;
  std::size_t at = 0;
  while (at < raw.size()) {
    const auto end = raw.find("\r\n\r\n", at);
    if (raw.compare(at, 9, "HTTP/1.1 ") != 0 || end == std::string::npos) {
      out.push_back(-1);  // not a response where one must start
      break;
    }
    const std::string head = raw.substr(at, end + 4 - at);
    out.push_back(std::stoi(head.substr(9, 3)));
    std::size_t length = 0;
    const auto cl = head.find("Content-Length: ");
    if (cl != std::string::npos) length = std::stoul(head.substr(cl + 16));
    const bool skip_body = out.size() <= bodiless.size() && bodiless[out.size() - 1];
    at = end + 4 + (skip_body ? 0 : length);
  }
  return out;
}

}  // namespace

// RFC 9110 9.3.2: the answer to HEAD is the answer to GET without its content. A body after it would be
// read by a keep-alive client (or a load balancer probing with HEAD) as the start of the next answer.
TEST_CASE("HEAD is answered like GET, without a body, and the connection stays in step", "[protocol][head]") {
  gateway_with_mock env;
  http_connection conn(env.gw.port());
  conn.send_raw(
      "HEAD /nope HTTP/1.1\r\nHost: x\r\n\r\n"
      "HEAD " +
      offer_target("H1") +
      " HTTP/1.1\r\nHost: x\r\n\r\n"
      "HEAD " +
      offer_target("") +
      " HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const auto raw = all_received(conn);
  INFO(raw);
  CHECK(statuses(raw, {true, true, true, false}) == std::vector<int>{404, 200, 400, 404});
  // The HEAD answer for the route announces the length a GET would have, and the route really ran.
  const auto second = raw.find("HTTP/1.1 200");
  REQUIRE(second != std::string::npos);
  CHECK(raw.find("Content-Length: ", second) < raw.find("\r\n\r\n", second));
  CHECK(sum_over_calls(env.mock, env.mock.stats(), "requests") == 6);
  check_clean_exit(env.gw);
}

TEST_CASE("405 lists HEAD beside GET in Allow", "[protocol][head]") {
  gateway_with_mock env;
  http_connection conn(env.gw.port());
  auto res = conn.request("POST", offer_target("A1"), {}, "{}");
  CHECK(res.status == 405);
  CHECK(res.header("allow").value_or("") == "GET, HEAD");
  check_clean_exit(env.gw);
}

// RFC 9112 6.3: a request whose final transfer coding is not chunked has no determinable length: 400 and
// close. A coding the gateway does not implement (it decodes only chunked): 501 and close. Either way the
// bytes after the head must never be taken for another request (request smuggling).
TEST_CASE("a request with a transfer coding other than chunked is refused and its body never runs",
          "[protocol][smuggling]") {
  gateway_with_mock env;
  const std::string smuggled = "GET " + offer_target("SMUGGLED") + " HTTP/1.1\r\nHost: x\r\n\r\n";
  struct variant {
    std::string coding;
    int status;
  };
  for (const auto& v : std::vector<variant>{{"gzip", 400},
                                            {"chunked, gzip", 400},
                                            {"gzip, chunked", 501},
                                            {"x-unknown, chunked", 501},
                                            {"identity", 400}}) {
    INFO("Transfer-Encoding: " << v.coding);
    http_connection conn(env.gw.port());
    std::string body = smuggled;
    if (v.coding.size() >= 7 && v.coding.substr(v.coding.size() - 7) == "chunked") {
      char size[16];
      std::snprintf(size, sizeof size, "%zx", smuggled.size());
      body = std::string(size) + "\r\n" + smuggled + "\r\n0\r\n\r\n";
    }
    conn.send_raw("POST " + offer_target("A1") + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + v.coding +
                  "\r\n\r\n" + body);
    const auto raw = all_received(conn);
    INFO(raw);
    CHECK(statuses(raw) == std::vector<int>{v.status});
    CHECK(raw.find("Connection: close") != std::string::npos);
  }
  CHECK(env.mock.path_counter(env.mock.stats(), "inventory", "requests") == 0);
  check_clean_exit(env.gw);
}

TEST_CASE("a request-timeout header of any size is safe: huge values do not shorten the deadline",
          "[propagation][deadline]") {
  gateway_with_mock env;
  for (const char* value : {"9300000000000", "9223372036854775807", "99999999999999999999999"}) {
    INFO("X-Request-Timeout-Ms: " << value);
    auto res = http_get(env.gw.port(), offer_target("T1"), {{"X-Request-Timeout-Ms", value}});
    check_offer(res, "T1");
    res = http_get(env.gw.port(), offer_target("T2"), {{"x-envoy-expected-rq-timeout-ms", value}});
    check_offer(res, "T2");
  }
  check_clean_exit(env.gw);
}

// A connection that never sends a byte must not hold its slot for the whole idle_timeout: the first
// request must start arriving within header_timeout of the accept.
TEST_CASE("a connection that sends nothing is closed at header_timeout, not idle_timeout", "[limits]") {
  gateway_with_mock env("  header_timeout: 300ms\n  idle_timeout: 60s\n");
  http_connection silent(env.gw.port());
  const auto start = steady_clock::now();
  CHECK(silent.wait_closed_by_peer(5s));
  CHECK(elapsed_since(start) < 3s);
  // A kept-alive connection between requests still has idle_timeout.
  http_connection kept(env.gw.port());
  check_offer(kept.get(offer_target("K1")), "K1");
  std::string received;
  CHECK_FALSE(kept.wait_closed_by_peer(800ms, &received));
  check_offer(kept.get(offer_target("K2")), "K2");
  check_clean_exit(env.gw);
}

TEST_CASE("max_connections_per_client: one address cannot take every slot", "[limits][shed]") {
  gateway_with_mock env("  max_connections_per_client: 2\n");
  http_connection a(env.gw.port());
  http_connection b(env.gw.port());
  check_offer(a.get(offer_target("P1")), "P1");
  check_offer(b.get(offer_target("P2")), "P2");
  http_connection c(env.gw.port());
  const auto raw = all_received(c);
  CHECK(statuses(raw) == std::vector<int>{503});
  b.close();
  // The slot comes back once that connection is gone (its end is noticed asynchronously).
  bool served = false;
  for (int i = 0; i < 50 && !served; ++i) {
    http_connection d(env.gw.port());
    try {
      served = d.get(offer_target("P3"), {}, 1s).status == 200;
    } catch (const std::exception&) {
    }
    if (!served) std::this_thread::sleep_for(20ms);
  }
  CHECK(served);
  check_clean_exit(env.gw);
}

// No route takes a request body: a body is refused from the head alone, before it is read, so that
// max_connections bodies are never buffered for nothing.
TEST_CASE("a request body is refused before it is read, the connection closes", "[limits][body]") {
  gateway_with_mock env;
  {
    http_connection conn(env.gw.port());
    conn.send_raw("GET " + offer_target("B1") + " HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nabc");
    const auto raw = all_received(conn);
    INFO(raw);
    CHECK(statuses(raw) == std::vector<int>{413});
  }
  {
    http_connection conn(env.gw.port());
    conn.send_raw(
        "GET /nope HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
    const auto raw = all_received(conn);
    INFO(raw);
    CHECK(statuses(raw) == std::vector<int>{404});
  }
  // An empty body is no body.
  http_connection conn(env.gw.port());
  check_offer(conn.request("GET", offer_target("B2"), {{"Content-Length", "0"}}), "B2");
  CHECK(sum_over_calls(env.mock, env.mock.stats(), "requests") == 6);
  check_clean_exit(env.gw);
}

// Answers are buffered against one process-wide budget: an answer that does not fit fails its call (a
// fallback), never the process, and the count goes back to zero once the answers are merged.
TEST_CASE("a downstream answer larger than the memory budget falls back", "[limits][memory]") {
  mock_downstream mock({"--delay", "5ms", "--path", "recommendation=big"});
  seed_config cfg{mock.url()};
  cfg.limits = "  memory_budget: 1MiB\n";
  cfg.downstream_extra = "    max_response_bytes: 4MiB\n";
  gateway_process gw(cfg.yaml());
  for (int i = 0; i < 3; ++i)
    check_offer(http_get(gw.port(), offer_target("MB" + std::to_string(i))), "MB" + std::to_string(i),
                {"recommendation"});
  auto metrics = http_get(gw.admin_port(), "/metrics").body;
  CHECK(metrics.find("\ngateway_memory_budget_bytes 1048576\n") != std::string::npos);
  CHECK(metrics.find("\ngateway_buffered_bytes 0\n") != std::string::npos);
  check_clean_exit(gw);
}
