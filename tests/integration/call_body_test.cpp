// Calls with other methods and bodies, against the real gateway and mock: the client's JSON body passed
// through, a body built from parameters, 100-continue, size and JSON checks, and no retry of a call that
// is not idempotent.

#include "tests/integration/metric_scrape.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/processes.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace test_support;

namespace {

std::string body_config(const mock_downstream& mock, const std::string& extra_call = "") {
  return "server:\n  listen: 127.0.0.1:0\nlimits:\n  max_body_bytes: 1KiB\ndownstreams:\n  mock:\n    url: " +
         mock.url() + "\n" + R"(routes:
  - path: /api/cart/{user}
    method: POST
    response: object
    calls:
      - {name: cart, downstream: mock, method: POST, path: '/cart?user={user}', body: client}
      - name: audit
        downstream: mock
        method: PUT
        path: /audit
        body_template: {user: '{user}', source: gateway}
)" + extra_call;
}

nlohmann::json last(mock_downstream& mock, const std::string& path) {
  return mock.stats()["paths"][path]["last_headers"];
}

}  // namespace

TEST_CASE("call bodies: the client's JSON body is passed through, a built body escapes its values",
          "[body]") {
  mock_downstream mock({"--record-headers", "content-type"});
  gateway_process gw(body_config(mock));
  http_connection client(gw.port());
  const std::string body = R"({"sku":"A1","qty":2})";
  auto r = client.request("POST", "/api/cart/bob%22x", {{"Content-Type", "application/json"}}, body);
  REQUIRE(r.status == 200);
  CHECK(r.degraded_calls() == std::nullopt);
  auto cart = last(mock, "cart");
  CHECK(cart["@method"] == "POST");
  CHECK(cart["@body"] == body);
  CHECK(cart["content-type"] == "application/json");
  auto audit = last(mock, "audit");
  CHECK(audit["@method"] == "PUT");
  CHECK(nlohmann::json::parse(audit["@body"].get<std::string>()) ==
        nlohmann::json{{"user", "bob\"x"}, {"source", "gateway"}});

  // Not a JSON object: 400, no call made.
  const auto before = mock.path_counter(mock.stats(), "cart", "requests");
  r = client.request("POST", "/api/cart/bob", {}, "[1,2]");
  CHECK(r.status == 400);
  CHECK(mock.path_counter(mock.stats(), "cart", "requests") == before);
}

TEST_CASE("call bodies: 100-continue, the size limit, and routes without bodies", "[body]") {
  mock_downstream mock({"--record-headers", "content-type"});
  gateway_process gw(body_config(mock));
  SECTION("Expect: 100-continue gets its interim answer, then the final one") {
    http_connection client(gw.port());
    client.send_raw(
        "POST /api/cart/ann HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 9\r\n\r\n");
    // The interim answer comes before any of the body is sent (the client reader skips interim answers,
    // so it is looked for in the raw bytes).
    std::string received;
    CHECK_FALSE(client.wait_closed_by_peer(std::chrono::milliseconds(1000), &received));
    CHECK(received == "HTTP/1.1 100 Continue\r\n\r\n");
    client.send_raw(R"({"a":1.5})");
    const auto r = client.read_response();
    CHECK(r.status == 200);
    CHECK(last(mock, "cart")["@body"] == R"({"a":1.5})");
  }
  SECTION("a body over max_body_bytes: 413 from its head, nothing read") {
    // Only the head is sent: the answer must come without the body (the gateway closes after it, and
    // unread bytes at that close could reset the connection before the answer is read).
    http_connection client(gw.port());
    client.send_raw("POST /api/cart/ann HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n");
    CHECK(client.read_response().status == 413);
  }
  SECTION("a body over max_body_bytes sent whole anyway: the 413 is still read (a lingering close)") {
    // The gateway answers from the head and closes; what the client keeps sending is read and dropped
    // until it is done, so the close does not reset the connection under the answer.
    http_connection client(gw.port());
    client.send_raw("POST /api/cart/ann HTTP/1.1\r\nHost: x\r\nContent-Length: 4194304\r\n\r\n");
    const std::string piece(64 * 1024, 'x');
    for (int i = 0; i < 64; ++i) client.send_raw(piece);
    const auto r = client.read_response();
    CHECK(r.status == 413);
    CHECK(client.wait_closed_by_peer(std::chrono::milliseconds(5000)));
  }
  SECTION("a chunked body over the limit: 413") {
    http_connection client(gw.port());
    std::string chunk(600, 'x');
    char size[16];
    std::snprintf(size, sizeof size, "%zx", chunk.size());
    // The second chunk's size line already exceeds what is left of the 1 KiB: sent up to there only.
    client.send_raw("POST /api/cart/ann HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                    std::string(size) + "\r\n" + chunk + "\r\n" + size + "\r\n");
    CHECK(client.read_response().status == 413);
  }
}

TEST_CASE("call bodies: a call that is not idempotent is not retried after the downstream answered",
          "[body][retry]") {
  mock_downstream mock;
  gateway_process gw(body_config(mock));
  mock.control("cart", "unavailable");  // 503: retried for GET by default, not for POST
  const auto r = http_connection(gw.port()).request("POST", "/api/cart/ann", {}, R"({"a":1})");
  CHECK(r.status == 200);
  CHECK(r.degraded_reason("cart") == "error");
  CHECK(mock.path_counter(mock.stats(), "cart", "requests") == 1);
  CHECK(metric(gw, "gateway_downstream_retries_total", {{"downstream", "mock"}}) == 0);
}
