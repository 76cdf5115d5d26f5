// The gateway at the public edge, against the real binary and a downstream that records every head it
// receives: paths are made canonical before routes match and rewrite them (nothing climbs out of a
// pass-through route's rewrite or its downstream's base path), identity fields from untrusted clients
// never pass, Host and credentials are single, framing lookalikes and folded lines are refused.

#include "tests/support/http_client.hpp"
#include "tests/support/processes.hpp"
#include "tests/support/scripted_downstream.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

using namespace test_support;

namespace {

// A downstream that answers every request `200 {}` and keeps its head.
struct recording_downstream {
  scripted_downstream server{[](const scripted_downstream::request&) {
    return std::vector<scripted_downstream::piece>{
        {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"}};
  }};
  std::string url(const std::string& base_path) const { return server.url() + base_path; }
  std::vector<std::string> heads() const {
    std::vector<std::string> out;
    for (const auto& r : server.requests()) out.push_back(r.head);
    return out;
  }
  std::vector<std::string> targets() const {
    std::vector<std::string> out;
    for (const auto& r : server.requests()) out.push_back(r.target);
    return out;
  }
  // Field `name` of the last head (several joined by ", "), or "<absent>".
  std::string last_field(std::string_view name) const {
    const auto all = server.requests();
    if (all.empty()) return "<absent>";
    std::string_view head = all.back().head;
    std::string value;
    bool found = false;
    for (auto at = head.find("\r\n"); at != std::string_view::npos && at + 4 < head.size();) {
      at += 2;
      const auto end = head.find("\r\n", at);
      const auto line = head.substr(at, end - at);
      const auto colon = line.find(':');
      const auto field = line.substr(0, colon);
      if (colon != std::string_view::npos && field.size() == name.size() &&
          std::equal(field.begin(), field.end(), name.begin(), [](char a, char b) {
            return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
          })) {
        if (found) value += ", ";
        value += line.substr(line.find_first_not_of(' ', colon + 1));
        found = true;
      }
      at = end;
    }
    return found ? value : "<absent>";
  }
};

std::string edge_config(const recording_downstream& be, const std::string& server_extra = "") {
  return "server:\n  listen: 127.0.0.1:0\n  threads: 1\n" + server_extra +
         "downstreams:\n  be:\n    url: " + be.url("/base") + R"(
routes:
  - path_prefix: /files/
    proxy: {downstream: be, rewrite: /blob/}
  - path_prefix: /item/
    proxy: {downstream: be}
  - path: /agg/{id}
    response: object
    headers: {forward: [Authorization]}
    calls:
      - {name: one, downstream: be, path: '/one/{id}'}
)";
}

// One raw request on a new connection; the answer, or status 0 when the connection closed without one.
http_response raw(std::uint16_t port, const std::string& bytes) {
  http_connection c(port);
  c.send_raw(bytes);
  try {
    return c.read_response();
  } catch (const http_error&) {
    return {};
  }
}

std::string get(const std::string& target, const std::string& fields = "Host: gw\r\n") {
  return "GET " + target + " HTTP/1.1\r\n" + fields + "\r\n";
}

bool dot_free(const std::string& target) {
  std::string lower = target;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("/../") == std::string::npos && lower.find("/./") == std::string::npos &&
         lower.find("%2e") == std::string::npos && lower.find('\\') == std::string::npos &&
         lower.find("%5c") == std::string::npos && lower.find("%2f") == std::string::npos &&
         lower.find('#') == std::string::npos;
}

}  // namespace

TEST_CASE("edge: no path climbs out of a pass-through route's rewrite or its downstream's base", "[edge]") {
  recording_downstream be;
  gateway_process gw(edge_config(be));
  // Resolved before routing: outside /files/ they match no route, and the downstream never sees them.
  for (const char* target : {"/files/a/../../../etc/passwd", "/files/%2e%2e/%2e%2e/internal/admin",
                             "/files/%2E%2E/%2E%2E/internal/admin", "/files/.%2e/x", "http://evil/files/../x",
                             "/item/%2e%2e/info", "/item/../info"}) {
    INFO(target);
    CHECK(raw(gw.port(), get(target)).status == 404);
  }
  // What no downstream should have to guess at: refused.
  for (const char* target :
       {"/files/..;/internal", "/files/..\\..\\x", "/files/a%5c..%5cb", "/files/a#b", "/files/%2fetc",
        "/files/%252e%252e/x", "/item/..;x/info", "//internal/admin", "/files/../..//internal/admin"}) {
    INFO(target);
    CHECK(raw(gw.port(), get(target)).status == 400);
  }
  CHECK(be.heads().empty());
  // Dot segments inside the route stay inside it; unreserved escapes are decoded.
  CHECK(raw(gw.port(), get("/files/a/../ok?x=../y")).status == 200);
  CHECK(raw(gw.port(), get("/files/%61/./b")).status == 200);
  CHECK(raw(gw.port(), get("/item/%41/info")).status == 200);
  const auto targets = be.targets();
  REQUIRE(targets.size() == 3);
  CHECK(targets[0] == "/base/blob/ok?x=../y");
  CHECK(targets[1] == "/base/blob/a/b");
  CHECK(targets[2] == "/base/item/A/info");
  for (const auto& t : targets) CHECK(dot_free(t.substr(0, t.find('?'))));
}

TEST_CASE("edge: a parameter is never a dot segment, whatever its encoding", "[edge]") {
  recording_downstream be;
  gateway_process gw(edge_config(be));
  CHECK(raw(gw.port(), get("/agg/%2e%2e")).status == 404);  // "/agg/.." is "/", no route
  CHECK(raw(gw.port(), get("/agg/..;")).status == 400);
  CHECK(raw(gw.port(), get("/agg/x")).status == 200);
  REQUIRE(be.targets().size() == 1);
  CHECK(be.targets()[0] == "/base/one/x");
}

TEST_CASE("edge: identity fields from an untrusted client never reach a downstream, whatever the mode",
          "[edge]") {
  recording_downstream be;
  const std::string spoofed =
      "Host: gw\r\nX-Forwarded-For: 6.6.6.6\r\nForwarded: for=6.6.6.6\r\nX-Real-IP: 6.6.6.6\r\n"
      "X-Forwarded-Port: 1\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: evil\r\nTrue-Client-IP: "
      "6.6.6.6\r\n";
  SECTION("forwarded: none") {
    gateway_process gw(edge_config(be, "  forwarded: none\n"));
    REQUIRE(raw(gw.port(), get("/files/a", spoofed)).status == 200);
    for (const char* name : {"X-Forwarded-For", "Forwarded", "X-Real-IP", "X-Forwarded-Port",
                             "X-Forwarded-Proto", "X-Forwarded-Host", "True-Client-IP"}) {
      INFO(name);
      CHECK(be.last_field(name) == "<absent>");
    }
  }
  SECTION("the default, x-forwarded") {
    gateway_process gw(edge_config(be));
    REQUIRE(raw(gw.port(), get("/files/a", spoofed)).status == 200);
    CHECK(be.last_field("X-Forwarded-For") == "127.0.0.1");
    CHECK(be.last_field("X-Forwarded-Proto") == "http");
    CHECK(be.last_field("X-Forwarded-Host") == "gw");
    for (const char* name : {"Forwarded", "X-Real-IP", "X-Forwarded-Port", "True-Client-IP"}) {
      INFO(name);
      CHECK(be.last_field(name) == "<absent>");
    }
  }
  SECTION("a trusted proxy's fields pass") {
    gateway_process gw(edge_config(be, "  forwarded: none\n  trusted_proxies: [127.0.0.0/8]\n"));
    REQUIRE(raw(gw.port(), get("/files/a", spoofed)).status == 200);
    CHECK(be.last_field("X-Real-IP") == "6.6.6.6");
    CHECK(be.last_field("X-Forwarded-For") == "6.6.6.6");
  }
}

TEST_CASE("edge: one Host and one Authorization, and the absolute form's authority is the host", "[edge]") {
  recording_downstream be;
  gateway_process gw(edge_config(be));
  CHECK(raw(gw.port(), get("/files/a", "Host: a.example\r\nHost: evil.example\r\n")).status == 400);
  CHECK(raw(gw.port(), get("/files/a", "")).status == 400);  // HTTP/1.1 without Host
  CHECK(raw(gw.port(), get("/files/a", "Host: a.example, evil.example\r\n")).status == 400);
  CHECK(raw(gw.port(), get("/files/a", "Host: gw\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n"))
            .status == 400);
  CHECK(raw(gw.port(), get("/agg/x", "Host: gw\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n"))
            .status == 400);
  CHECK(be.heads().empty());
  CHECK(raw(gw.port(), "GET /files/a HTTP/1.0\r\n\r\n").status == 200);  // HTTP/1.0 needs no Host
  CHECK(raw(gw.port(), get("http://b.example/files/a", "Host: a.example\r\n")).status == 200);
  CHECK(be.last_field("X-Forwarded-Host") == "b.example");
  CHECK(be.targets().back() == "/base/blob/a");
}

TEST_CASE("edge: fields the client's Connection names are not forwarded by an aggregate route", "[edge]") {
  recording_downstream be;
  gateway_process gw(edge_config(be));
  REQUIRE(raw(gw.port(), get("/agg/x", "Host: gw\r\nAuthorization: Bearer a\r\n")).status == 200);
  CHECK(be.last_field("Authorization") == "Bearer a");
  REQUIRE(
      raw(gw.port(), get("/agg/y", "Host: gw\r\nAuthorization: Bearer a\r\nConnection: Authorization\r\n"))
          .status == 200);
  CHECK(be.last_field("Authorization") == "<absent>");
}

TEST_CASE("edge: framing lookalikes, length lists and folded lines are refused and the connection closed",
          "[edge]") {
  recording_downstream be;
  gateway_process gw(edge_config(be));
  for (const char* fields :
       {"Host: gw\r\nContent-Length: 3,3\r\n", "Host: gw\r\nContent-Length: 3\r\nContent-Length: 3\r\n",
        "Host: gw\r\nTransfer_Encoding: chunked\r\n", "Host: gw\r\nContent_Length: 3\r\n",
        "Host: gw\r\nContent--Length: 3\r\n", "Host: gw\r\nX-A: 1\r\n Content-Length: 3\r\n",
        "Host: gw\r\nX-A: 1\r\n\tTransfer-Encoding: chunked\r\n"}) {
    INFO(fields);
    http_connection c(gw.port());
    c.send_raw(std::string("POST /files/a HTTP/1.1\r\n") + fields + "\r\nabc" + get("/files/b"));
    const auto r = c.read_response();
    CHECK(r.status == 400);
    CHECK(c.wait_closed_by_peer(std::chrono::milliseconds(3000)));
  }
  CHECK(be.heads().empty());
}
