// What the loader refuses because it would be unsafe or would never do what it says: credentials in a
// downstream url. Each refusal is one error at the offending value's line and column.

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

  std::string yaml() const {
    std::string y = "server:\n  listen: 127.0.0.1:0\ndownstreams:\n  d:\n    url: " + url + "\nroutes:\n";
    y += "  - " + route_path + "\n    method: POST\n    params: {role: {}}\n";
    if (!route_headers.empty()) y += "    headers: " + route_headers + "\n";
    y += "    calls:\n      - name: one\n        downstream: d\n        path: /one\n";
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
