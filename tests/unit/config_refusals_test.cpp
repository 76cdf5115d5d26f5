// What the loader refuses because it would be unsafe or would never do what it says: credentials in a
// downstream url, header policies that name fields the gateway writes itself, parameters in the member
// names of a body_template, and a '*' in a route path. Each refusal is one error at the offending value's
// line and column.

#include "gateway/codec/body_template.hpp"
#include "gateway/config/config_loader.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace gateway;

namespace {

// An aggregate route /a with one call, and a pass-through route /p/: `route_headers` and `call_headers`
// are flow mappings given to the aggregate route and its call, `proxy_headers` to the proxy route, and
// `url` is the downstream's.
struct config_parts {
  std::string url = "http://127.0.0.1:9001/base";
  std::string route_headers;
  std::string call_headers;
  std::string proxy_headers;
  std::string body_template;
  std::string route_path = "path: /a";
  std::string proxy_path = "path_prefix: /p/";
  std::string server_lines;  // more lines of the server section, indented
  std::string top_lines;     // top-level lines before `downstreams`
  std::string route_lines;   // more lines of the aggregate route, indented
  std::string call_lines;    // more lines of its call, indented, e.g. "        pass_status: [401]\n"

  std::string yaml() const {
    std::string y = "server:\n  listen: 127.0.0.1:0\n" + server_lines + top_lines +
                    "downstreams:\n  d:\n    url: " + url + "\nroutes:\n";
    y += "  - " + route_path + "\n    method: POST\n    params: {role: {}}\n";
    if (!route_headers.empty()) y += "    headers: " + route_headers + "\n";
    y += route_lines;
    y += "    calls:\n      - name: one\n        downstream: d\n        path: /one\n" + call_lines;
    if (!body_template.empty()) y += "        method: POST\n        body_template: " + body_template + "\n";
    if (!call_headers.empty()) y += "        headers: " + call_headers + "\n";
    y += "  - " + proxy_path + "\n    proxy: {downstream: d}\n";
    if (!proxy_headers.empty()) y += "    headers: " + proxy_headers + "\n";
    return y;
  }
};

// The 1-based line of the first line of `text` holding `needle`, and the column of `needle` in it.
std::pair<int, int> position_of(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  REQUIRE(at != std::string::npos);
  const auto line_start = text.rfind('\n', at);
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  const auto column = at - (line_start == std::string::npos ? 0 : line_start + 1) + 1;
  return {static_cast<int>(line), static_cast<int>(column)};
}

// The one error of `parts`' configuration; it must be at `at` (a text of the configuration).
config_error one_error_at(const config_parts& parts, const std::string& at) {
  const auto yaml = parts.yaml();
  INFO(yaml);
  const auto r = load_config_text(yaml, "t.yaml");
  CHECK_FALSE(r.config.has_value());
  REQUIRE(r.errors.size() == 1);
  INFO(r.errors[0].message);
  const auto [line, column] = position_of(yaml, at);
  CHECK(r.errors[0].line == line);
  CHECK(r.errors[0].column == column);
  return r.errors[0];
}

bool loads(const config_parts& parts) {
  const auto r = load_config_text(parts.yaml(), "t.yaml");
  INFO(parts.yaml());
  INFO((r.errors.empty() ? std::string() : r.errors[0].message));
  return r.errors.empty();
}

}  // namespace

TEST_CASE("a downstream url with credentials is refused at its line, without echoing the password",
          "[config][security]") {
  REQUIRE(loads(config_parts{}));
  for (const std::string url : {"http://user:hunter2@127.0.0.1:9001/x", "http://user:hunter2@shop.internal/x",
                                "https://user:hunter2@shop.internal:8443", "http://hunter2@127.0.0.1:9001"}) {
    INFO(url);
    config_parts parts;
    parts.url = url;
    const auto e = one_error_at(parts, url);
    CHECK(e.message.find("hunter2") == std::string::npos);
    CHECK_THAT(e.message, Catch::Contains("credentials"));
    CHECK_THAT(e.message, Catch::Contains("headers.set: {Authorization:"));
    CHECK_THAT(e.message, Catch::Contains("${"));
  }
  // An '@' in the base path is no credential.
  config_parts at_in_path;
  at_in_path.url = "http://127.0.0.1:9001/users/@me";
  CHECK(loads(at_in_path));
}

TEST_CASE("header policy of aggregate routes and calls: the gateway's own fields are refused where named",
          "[config][headers][security]") {
  for (const std::string name : {"Content-Type", "Accept-Encoding", "Accept", "X-Request-Timeout-Ms",
                                 "tracestate", "X-Real-IP", "Content-Length", "Host"}) {
    INFO(name);
    config_parts route_set;
    route_set.route_headers = "{set: {" + name + ": x}}";
    auto e = one_error_at(route_set, "{" + name);
    CHECK_THAT(e.message, Catch::Contains(name));
    CHECK_THAT(e.message, Catch::Contains("cannot be forwarded or set"));

    config_parts route_forward;
    route_forward.route_headers = "{forward: [" + name + "]}";
    one_error_at(route_forward, "[" + name);

    config_parts call_set;
    call_set.call_headers = "{set: {" + name + ": x}}";
    one_error_at(call_set, "{" + name);

    config_parts call_forward;
    call_forward.call_headers = "{forward: [" + name + "]}";
    one_error_at(call_forward, "[" + name);
  }
  // What a call may still do: remove such a field, set or forward fields that are not the gateway's.
  config_parts fine;
  fine.route_headers = "{forward: [Authorization, Accept-Language], set: {X-Api-Key: k}}";
  fine.call_headers = "{remove: [X-Forwarded-Host, Content-Type], set: {X-Tenant: t}}";
  CHECK(loads(fine));
}

TEST_CASE("pass-through header policy: framing, identity, Host, Expect and trace fields are refused",
          "[config][headers][proxy][security]") {
  for (const std::string name :
       {"Transfer-Encoding", "Content-Length", "Connection", "Host", "Expect", "traceparent", "tracestate",
        "X-Forwarded-For", "Forwarded", "X-Real-IP", "X-Request-Id"}) {
    INFO(name);
    config_parts parts;
    parts.proxy_headers = "{set: {" + name + ": x}}";
    const auto e = one_error_at(parts, "{" + name);
    CHECK_THAT(e.message, Catch::Contains(name));
  }
  // The gateway writes no Accept, Accept-Encoding or Content-Type on a pass-through request: a route may
  // set them (the client's are then replaced), and remove anything.
  config_parts parts;
  parts.proxy_headers =
      "{set: {Content-Type: application/json, Accept: text/html, Accept-Encoding: identity}, remove: [Host, "
      "Cookie]}";
  CHECK(loads(parts));
}

TEST_CASE("body_template: a parameter in a member name is refused, in values it stays",
          "[config][body][security]") {
  std::string error;
  CHECK(body_template::parse(R"({"role":"guest","user":"{role}"})", error));
  CHECK_FALSE(body_template::parse(R"({"role":"guest","{role}":"admin"})", error));
  CHECK_THAT(error, Catch::Contains("member name"));
  CHECK_FALSE(body_template::parse(R"({"a":{"x{role}":1}})", error));        // nested, and inside a name
  CHECK_FALSE(body_template::parse(R"({"a":[{"{role}":1}]})", error));       // in an array's object
  CHECK(body_template::parse(R"({"a":[":{role}"],"b":"{role}:"})", error));  // a ':' in a value

  config_parts parts;
  parts.body_template = "{role: guest, '{role}': admin}";
  const auto e = one_error_at(parts, "{role: guest");
  CHECK_THAT(e.message, Catch::Contains("'{role}'"));
  CHECK_THAT(e.message, Catch::Contains("member name"));
  parts.body_template = "{role: guest, name: '{role}'}";
  CHECK(loads(parts));
}

TEST_CASE("a '*' in a route path or prefix is refused with what to write instead", "[config][routing]") {
  SECTION("a pass-through route") {
    config_parts parts;
    parts.proxy_path = "path: /legacy/*";
    const auto e = one_error_at(parts, "/legacy/*");
    CHECK_THAT(e.message, Catch::Contains("path_prefix: /legacy/"));
    CHECK_THAT(e.message, Catch::Contains("{rest*}"));
  }
  SECTION("an aggregate route, and a '*' in the middle") {
    config_parts parts;
    parts.route_path = "path: /api/*/x";
    const auto e = one_error_at(parts, "/api/*/x");
    CHECK_THAT(e.message, Catch::Contains("path_prefix: /api/"));
  }
  SECTION("a path_prefix") {
    config_parts parts;
    parts.proxy_path = "path_prefix: /legacy/*";
    const auto e = one_error_at(parts, "/legacy/*");
    CHECK_THAT(e.message, Catch::Contains("path_prefix: /legacy/"));
  }
  SECTION("a catch-all parameter is no '*' segment") {
    config_parts parts;
    parts.route_path = "path: /files/{rest*}";
    CHECK(loads(parts));
  }
}

TEST_CASE("a call's body written as a mapping points to body_template", "[config]") {
  config_parts parts;
  parts.call_lines = "        method: POST\n        body: {\"id\": \"{role}\"}\n";
  const auto e = one_error_at(parts, "{\"id\"");
  CHECK_THAT(e.message, Catch::Contains("call.body: expected a scalar value"));
  CHECK_THAT(e.message, Catch::Contains("'client'"));
  CHECK_THAT(e.message, Catch::Contains("use body_template"));
  parts.call_lines = "        method: POST\n        body_template: {\"id\": \"{role}\"}\n";
  CHECK(loads(parts));
}

TEST_CASE("a deadline at the top level says it is set per route", "[config]") {
  config_parts parts;
  parts.top_lines = "deadline: 500ms\n";
  const auto e = one_error_at(parts, "deadline: 500ms");
  CHECK_THAT(e.message, Catch::Contains("unknown key 'deadline'"));
  CHECK_THAT(e.message, Catch::Contains("set per route (routes[].deadline)"));
  parts.top_lines.clear();
  parts.route_lines = "    deadline: 500ms\n";
  CHECK(loads(parts));
}

TEST_CASE("a CORS error names its route, at the value's file:line:column", "[config][cors]") {
  config_parts parts;
  parts.route_lines = "    cors: {allow_origins: [shop.example]}\n";
  const auto e = one_error_at(parts, "[shop.example]");
  CHECK_THAT(e.message, Catch::Contains("route '/a'.cors.allow_origins"));
  const auto [line, column] = position_of(parts.yaml(), "[shop.example]");
  CHECK(format_config_error("t.yaml", e) ==
        "t.yaml:" + std::to_string(line) + ":" + std::to_string(column) + ": " + e.message);
  parts.route_lines = "    cors: {allow_origins: ['*'], allow_credentials: true}\n";
  CHECK_THAT(one_error_at(parts, "true}").message, Catch::Contains("route '/a'.cors.allow_credentials"));
  parts.route_lines = "    cors: {max_age: 1m}\n";
  CHECK_THAT(one_error_at(parts, "{max_age").message, Catch::Contains("route '/a'.cors: cors needs"));
  parts.route_lines = "    cors: {allow_origins: ['https://shop.example']}\n";
  CHECK(loads(parts));
}

TEST_CASE("server.error_detail takes full or reason", "[config]") {
  config_parts parts;
  parts.server_lines = "  error_detail: verbose\n";
  const auto e = one_error_at(parts, "verbose");
  CHECK_THAT(e.message, Catch::Contains("'full' or 'reason'"));
  parts.server_lines = "  error_detail: reason\n";
  CHECK(loads(parts));
  CHECK(load_config_text(parts.yaml(), "t.yaml").config->server.errors == error_detail::reason);
  parts.server_lines.clear();
  CHECK(load_config_text(parts.yaml(), "t.yaml").config->server.errors == error_detail::full);
}

TEST_CASE("pass_status and pass_headers: statuses outside 400-599, repeats and framing fields are refused",
          "[config][pass_status]") {
  config_parts fine;
  fine.call_lines =
      "        pass_status: [401, 403, 404, 429, 503]\n        pass_headers: [WWW-Authenticate, "
      "Retry-After]\n";
  CHECK(loads(fine));

  for (const std::string list : {"[401, 399]", "[200]", "[600]", "[401, abc]", "[401, 401]"}) {
    INFO(list);
    config_parts parts;
    parts.call_lines = "        pass_status: " + list + "\n";
    const auto e = one_error_at(parts, list);
    CHECK_THAT(e.message, Catch::Contains("pass_status"));
  }
  for (const std::string name :
       {"Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Upgrade", "Trailer", "TE",
        "Content-Type", "Content-Encoding", "X-Request-Id", "X-Degraded", "Vary", "bad name"}) {
    INFO(name);
    config_parts parts;
    parts.call_lines = "        pass_status: [401]\n        pass_headers: [" + name + "]\n";
    const auto e = one_error_at(parts, "[" + name + "]");
    CHECK_THAT(e.message, Catch::Contains(name));
  }
  // Fields without a status to pass them with would never reach a client.
  config_parts alone;
  alone.call_lines = "        pass_headers: [WWW-Authenticate]\n";
  const auto e = one_error_at(alone, "[WWW-Authenticate]");
  CHECK_THAT(e.message, Catch::Contains("pass_status"));
}
