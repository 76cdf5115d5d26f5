// A downstream that sends bytes after an answer that has no body (to HEAD, a 204, a 304) is out of step
// with its connection: those bytes must never be taken for the next exchange's answer, so the connection
// is not reused. Against a scripted downstream that writes a whole second answer behind the bodiless one,
// in the same write, or (over TLS) as a record of its own, which the gateway's TLS layer may have read
// already; the next request comes once those bytes have been sent (bytes that arrive only after it went
// out cannot be told from its answer). For pass-through routes and aggregate calls.

#include "tests/support/http_client.hpp"
#include "tests/support/processes.hpp"
#include "tests/support/scripted_downstream.hpp"
#include "tests/support/tls_files.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <random>
#include <sstream>
#include <string>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

const std::string poison = "HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n{\"file\":\"poison\"}";
const std::string file_b = "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{\"file\":\"b\"}";

// Answers HEAD /files/a, GET /files/204 and GET /files/304 without a body, followed by `poison` (in the
// same write unless `apart`); anything else with file b.
scripted_downstream::script bodiless_then_poison(bool apart) {
  return [apart](const scripted_downstream::request& r) -> std::vector<scripted_downstream::piece> {
    std::string head;
    if (r.method == "HEAD") {
      head = "HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n";
    } else if (r.target.ends_with("/204")) {
      head = "HTTP/1.1 204 No Content\r\n\r\n";
    } else if (r.target.ends_with("/304")) {
      head = "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\n\r\n";
    } else {
      return {{file_b}};
    }
    if (apart) return {{head}, {poison}};
    return {{head + poison}};
  };
}

// One I/O thread and one connection to the downstream: the next exchange would take the same one.
std::string config_for(const scripted_downstream& files, const std::string& tls) {
  std::string y =
      "server:\n  listen: 127.0.0.1:0\n  threads: 1\ndownstreams:\n  files:\n    url: " + files.url() +
      "\n    max_connections: 1\n";
  if (!tls.empty()) y += "    tls: {ca_file: '" + tls + "'}\n";
  y += R"(routes:
  - path_prefix: /files/
    proxy: {downstream: files, timeout: 2s}
  - path: /agg/{what}
    calls:
      - {name: f, downstream: files, path: '/files/{what}', fallback: {file: none}}
)";
  return y;
}

// The connection number each request for `target` came on, in order.
std::vector<std::size_t> connections_of(const scripted_downstream& files, const std::string& target) {
  std::vector<std::size_t> out;
  for (const auto& r : files.requests()) {
    if (r.target == target) out.push_back(r.connection);
  }
  return out;
}

void check_next_exchange_is_clean(const std::string& tls_ca, const std::string& cert, const std::string& key,
                                  bool apart) {
  for (const std::string first : {"HEAD /files/a", "GET /files/204", "GET /files/304"}) {
    INFO(first << (apart ? ", the bytes after it written apart" : ", the bytes after it in the same write"));
    scripted_downstream files(bodiless_then_poison(apart), cert, key);
    gateway_process gw(config_for(files, tls_ca));

    http_connection a(gw.port());
    a.send_raw(first + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    std::string answer_a;
    CHECK(a.wait_closed_by_peer(3000ms, &answer_a));
    CHECK(answer_a.find("poison") == std::string::npos);
    // The bytes behind A's answer have left the downstream before B's request reaches the gateway (bytes
    // that come only after the next request went out cannot be told from its answer).
    REQUIRE(files.wait_answered(1));
    const auto b = http_get(gw.port(), "/files/b");
    CHECK(b.status == 200);
    CHECK(b.body == R"({"file":"b"})");
    // B's request went on a new connection, never on the one with bytes behind A's answer.
    const auto target_a = first.substr(first.find(' ') + 1);
    REQUIRE(connections_of(files, target_a).size() == 1);
    REQUIRE(connections_of(files, "/files/b").size() == 1);
    CHECK(connections_of(files, "/files/b")[0] != connections_of(files, target_a)[0]);
  }
}

}  // namespace

TEST_CASE("proxy: bytes after a bodiless answer never reach the next exchange on that connection",
          "[proxy][pool]") {
  SECTION("plain, in the same write") {
    check_next_exchange_is_clean("", "", "", false);
  }
  SECTION("TLS, a record of their own") {
    tls_files certs;
    check_next_exchange_is_clean(certs.ca_cert, certs.server_cert, certs.server_key, true);
  }
}

TEST_CASE("aggregate calls: bytes after a 204 or 304 answer never reach the next call on that connection",
          "[degraded][pool]") {
  for (const bool tls : {false, true}) {
    for (const std::string first : {"204", "304"}) {
      INFO((tls ? "TLS, " : "plain, ") << first);
      std::optional<tls_files> certs;
      if (tls) certs.emplace();
      scripted_downstream files(bodiless_then_poison(tls), tls ? certs->server_cert : "",
                                tls ? certs->server_key : "");
      gateway_process gw(config_for(files, tls ? certs->ca_cert : ""));
      http_get(gw.port(), "/agg/" + first);  // its answer has no JSON body: the call falls back
      REQUIRE(files.wait_answered(1));
      const auto b = http_get(gw.port(), "/agg/b");
      CHECK(b.status == 200);
      INFO(b.body);
      CHECK(b.body.find(R"("file":"b")") != std::string::npos);
      REQUIRE(connections_of(files, "/files/" + first).size() == 1);
      REQUIRE(connections_of(files, "/files/b").size() == 1);
      CHECK(connections_of(files, "/files/b")[0] != connections_of(files, "/files/" + first)[0]);
    }
  }
}

// The gateway reads a plain connection's answer into its I/O thread's buffer and keeps in the connection
// only what it could not parse yet (an incomplete head or chunk size line). Answers whose heads and chunk
// lines arrive in pieces are read whole, and the connection then serves the next call with an answer in
// one write: nothing of the pieces is left behind.
TEST_CASE(
    "aggregate calls: answers whose heads and chunk lines arrive in pieces are read whole, and their "
    "connection serves the next call",
    "[pool]") {
  constexpr auto gap = 20ms;
  scripted_downstream files(
      [&](const scripted_downstream::request& r) -> std::vector<scripted_downstream::piece> {
        if (r.target.ends_with("/split-head"))
          return {{"HTTP/1.1 200 OK\r\nContent-Ty"},
                  {"pe: application/json\r\nContent-Len", gap},
                  {"gth: 21\r", gap},
                  {"\n\r", gap},
                  {"\n{\"file\":\"split-he", gap},
                  {"ad\"}", gap}};
        if (r.target.ends_with("/split-chunks"))
          return {{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"},
                  {"1", gap},
                  {"7\r\n{\"file\":\"split-chu", gap},
                  {"nks\"}\r\n0\r", gap},
                  {"\n\r\n", gap}};
        return {{file_b}};
      });
  gateway_process gw(config_for(files, ""));
  for (const std::string what : {"split-head", "b", "split-chunks", "b"}) {
    INFO(what);
    const auto r = http_get(gw.port(), "/agg/" + what);
    CHECK(r.status == 200);
    CHECK(r.body.find("\"file\":\"" + what + "\"") != std::string::npos);
    CHECK_FALSE(r.has_header("X-Degraded"));
  }
  // One connection served all four (max_connections: 1, each answer read whole and nothing after it).
  const auto seen = files.requests();
  REQUIRE(seen.size() == 4);
  for (const auto& r : seen) CHECK(r.connection == 0);
}

// The same, over many cuts: each answer of a few legal forms (a Content-Length, chunks with extensions and
// trailer fields, an interim 100 before the final head, a long field) is cut at random places (a fixed
// seed per request) into pieces written 3 ms apart. Every answer is read whole, none degraded, and one
// connection serves them all: no piece is lost or left behind, wherever the cuts fall.
TEST_CASE("aggregate calls: answers cut anywhere into pieces are read whole on one connection", "[pool]") {
  const auto answer_for = [](std::size_t i) {
    const std::string body = "{\"file\":\"r" + std::to_string(i) + "\"}";
    switch (i % 4) {
      case 0:
        return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: "
               "max-age=0\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n\r\n" + body;
      case 1:
        return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\n" + body.substr(0, 3) +
               "\r\n" +
               [&] {
                 std::ostringstream size;
                 size << std::hex << body.size() - 3;
                 return size.str();
               }() +
               "\r\n" + body.substr(3) + "\r\n0\r\nX-Trailer: t\r\n\r\n";
      case 2:
        return "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n\r\n" + body;
      default:
        return "HTTP/1.1 200 OK\r\nX-Long: " + std::string(3000, 'x') +
               "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    }
  };
  scripted_downstream files(
      [&](const scripted_downstream::request& r) -> std::vector<scripted_downstream::piece> {
        const auto i = static_cast<std::size_t>(std::stoul(r.target.substr(r.target.rfind('r') + 1)));
        const auto whole = answer_for(i);
        std::mt19937 cuts(static_cast<std::uint32_t>(i));
        std::vector<std::size_t> at{0, whole.size()};
        for (int c = 0; c < 1 + static_cast<int>(i % 5); ++c) at.push_back(1 + cuts() % (whole.size() - 1));
        std::sort(at.begin(), at.end());
        at.erase(std::unique(at.begin(), at.end()), at.end());
        std::vector<scripted_downstream::piece> pieces;
        for (std::size_t p = 0; p + 1 < at.size(); ++p)
          pieces.push_back({whole.substr(at[p], at[p + 1] - at[p]), p == 0 ? 0ms : 3ms});
        return pieces;
      });
  gateway_process gw(config_for(files, ""));
  constexpr std::size_t answers = 40;
  for (std::size_t i = 0; i < answers; ++i) {
    INFO("answer " << i);
    const auto r = http_get(gw.port(), "/agg/r" + std::to_string(i));
    CHECK(r.status == 200);
    CHECK(r.body.find("\"file\":\"r" + std::to_string(i) + "\"") != std::string::npos);
    CHECK_FALSE(r.has_header("X-Degraded"));
  }
  const auto seen = files.requests();
  REQUIRE(seen.size() == answers);
  for (const auto& r : seen) CHECK(r.connection == 0);
}
