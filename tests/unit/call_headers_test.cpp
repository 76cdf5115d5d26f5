// What downstream requests carry besides the gateway's own fields: the header policy (forwarded client
// fields, fixed ones, removals per call) and the forwarded fields that say who the client is, which only a
// trusted proxy may extend.

#include "gateway/downstream/call_headers.hpp"
#include "gateway/config/config_json.hpp"
#include "gateway/config/config_loader.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <string>

using namespace gateway;

namespace {

class fake_headers final : public client_headers {
 public:
  std::multimap<std::string, std::string> fields;  // lower-case names
  bool append(std::string_view name, std::string& out, std::string_view separator) const override {
    std::string lower(name);
    for (auto& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    bool any = false;
    for (auto [it, end] = fields.equal_range(lower); it != end; ++it) {
      if (any) out += separator;
      out += it->second;
      any = true;
    }
    return any;
  }
};

gateway_config load(const std::string& server_extra, const std::string& route_headers,
                    const std::string& call_headers_yaml) {
  const auto r = load_config_text(R"(server:
  listen: 127.0.0.1:0
)" + server_extra + R"(
downstreams:
  d: {url: http://127.0.0.1:9}
routes:
  - path: /a
)" + route_headers + R"(
    calls:
      - name: one
        downstream: d
        path: /one
      - name: two
        downstream: d
        path: /two
)" + call_headers_yaml,
                                  "t.yaml");
  INFO((r.errors.empty() ? std::string() : r.errors[0].message));
  REQUIRE(r.errors.empty());
  return *r.config;
}

// The route every test here loads: an aggregate route with two calls.
const aggregate_route& route_of(const gateway_config& cfg) {
  return std::get<aggregate_route>(cfg.routes[0].kind);
}

}  // namespace

TEST_CASE("call headers: X-Forwarded-* name the peer, what an untrusted client sent is replaced",
          "[headers]") {
  const auto cfg = load("", "", "");
  fake_headers client;
  client.fields.emplace("host", "shop.example");
  client.fields.emplace("x-forwarded-for", "6.6.6.6");
  client.fields.emplace("x-forwarded-proto", "https");
  call_headers rendered;
  const auto* fields =
      rendered.render(route_of(cfg), cfg.server.forwarded, client, {.address = "10.1.2.3", .trusted = false});
  REQUIRE(fields != nullptr);
  CHECK(fields[0].headers ==
        "\r\nX-Forwarded-For: 10.1.2.3\r\nX-Forwarded-Proto: http\r\nX-Forwarded-Host: shop.example");
  CHECK(fields[1].headers == fields[0].headers);

  // Over the TLS listener, the proto is the gateway's own: https.
  fields = rendered.render(route_of(cfg), cfg.server.forwarded, client,
                           {.address = "10.1.2.3", .trusted = false, .https = true});
  CHECK(fields[0].headers ==
        "\r\nX-Forwarded-For: 10.1.2.3\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: shop.example");

  // A trusted proxy's chain is kept and extended.
  fields =
      rendered.render(route_of(cfg), cfg.server.forwarded, client, {.address = "10.1.2.3", .trusted = true});
  CHECK(
      fields[0].headers ==
      "\r\nX-Forwarded-For: 6.6.6.6, 10.1.2.3\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: shop.example");
}

TEST_CASE("call headers: RFC 7239 Forwarded quotes what is not a token, none sends nothing", "[headers]") {
  fake_headers client;
  client.fields.emplace("host", "shop.example:8080");
  client.fields.emplace("forwarded", "for=1.1.1.1");
  call_headers rendered;
  auto cfg = load("  forwarded: forwarded\n", "", "");
  auto* fields =
      rendered.render(route_of(cfg), cfg.server.forwarded, client, {.address = "::1", .trusted = false});
  REQUIRE(fields != nullptr);
  CHECK(fields[0].headers == "\r\nForwarded: for=\"[::1]\";host=\"shop.example:8080\";proto=http");
  fields =
      rendered.render(route_of(cfg), cfg.server.forwarded, client, {.address = "10.0.0.1", .trusted = true});
  CHECK(fields[0].headers ==
        "\r\nForwarded: for=1.1.1.1, for=10.0.0.1;host=\"shop.example:8080\";proto=http");

  cfg = load("  forwarded: none\n", "", "");
  CHECK(rendered.render(route_of(cfg), cfg.server.forwarded, client, {.address = "10.0.0.1"}) == nullptr);
}

TEST_CASE("call headers: the route's policy, a call's own, and what it removes", "[headers]") {
  const auto cfg =
      load("  forwarded: none\n",
           "    headers:\n"
           "      forward: [Authorization, Cookie, Accept-Language]\n"
           "      set: {X-Api-Key: k1, X-Team: shop}\n",
           "        headers: {remove: [Cookie, X-Team], set: {X-Api-Key: k2}, forward: [X-Tenant]}\n");
  fake_headers client;
  client.fields.emplace("authorization", "Bearer abc");
  client.fields.emplace("cookie", "a=1");
  client.fields.emplace("cookie", "b=2");
  client.fields.emplace("accept-language", "fr\r\nX-Evil: 1");  // a control character: not passed on
  client.fields.emplace("x-tenant", "t9");
  call_headers rendered;
  const auto* fields = rendered.render(route_of(cfg), cfg.server.forwarded, client, {.address = "10.0.0.1"});
  REQUIRE(fields != nullptr);
  CHECK(fields[0].headers ==
        "\r\nAuthorization: Bearer abc\r\nCookie: a=1; b=2\r\nX-Api-Key: k1\r\nX-Team: shop");
  CHECK(fields[1].headers == "\r\nAuthorization: Bearer abc\r\nX-Tenant: t9\r\nX-Api-Key: k2");
}

TEST_CASE("call headers: a call may remove a forwarded field", "[headers]") {
  const auto cfg = load("", "", "        headers: {remove: [X-Forwarded-Host]}\n");
  fake_headers client;
  client.fields.emplace("host", "h");
  call_headers rendered;
  const auto* fields = rendered.render(route_of(cfg), cfg.server.forwarded, client, {.address = "10.0.0.1"});
  REQUIRE(fields != nullptr);
  CHECK(fields[0].headers ==
        "\r\nX-Forwarded-For: 10.0.0.1\r\nX-Forwarded-Proto: http\r\nX-Forwarded-Host: h");
  CHECK(fields[1].headers == "\r\nX-Forwarded-For: 10.0.0.1\r\nX-Forwarded-Proto: http");
}

TEST_CASE("header policy config: reserved and malformed names, bad values, secrets redacted",
          "[headers][config]") {
  const auto errors_of = [](const std::string& headers) {
    return load_config_text(
               "server: {listen: 127.0.0.1:0}\n"
               "downstreams:\n  d: {url: http://127.0.0.1:9}\n"
               "routes:\n  - path: /a\n    headers: " +
                   headers + "\n    calls: [{name: one, downstream: d, path: /one}]\n",
               "t.yaml")
        .errors;
  };
  for (const std::string bad :
       {"{forward: [Connection]}", "{forward: [Host]}", "{forward: [X-Forwarded-For]}",
        "{forward: ['Bad Name']}", "{set: {Transfer-Encoding: chunked}}", "{set: {X-A: 1}}",
        "{remove: [Cookie]}", "{set: {X-A: \"a\\nb\"}}", "{set: {X-A: '${GATEWAY_TEST_UNSET_VAR}'}}"}) {
    INFO(bad);
    CHECK_FALSE(errors_of(bad).empty());
  }
  ::setenv("GATEWAY_TEST_HEADER_SECRET", "s3cret", 1);
  const auto r = load_config_text(
      "server: {listen: 127.0.0.1:0, trusted_proxies: [10.0.0.0/8, '::1']}\n"
      "downstreams:\n  d: {url: http://127.0.0.1:9}\n"
      "routes:\n  - path: /a\n    headers: {set: {X-Key: '${GATEWAY_TEST_HEADER_SECRET}', X-Team: shop, "
      "X-Api-Token: literal}}\n    calls: [{name: one, downstream: d, path: /one}]\n",
      "t.yaml");
  REQUIRE(r.errors.empty());
  const auto& set = route_of(*r.config).calls[0].effective_headers.set;
  REQUIRE(set.size() == 3);
  CHECK(set[1].name == "X-Key");  // in name order
  CHECK(set[1].value == "s3cret");
  const auto shown = effective_config_json(*r.config).dump();
  CHECK(shown.find("s3cret") == std::string::npos);
  CHECK(shown.find("literal") == std::string::npos);  // a credential's name: redacted though literal
  CHECK(shown.find("\"X-Team\":\"shop\"") != std::string::npos);
  CHECK(r.config->server.trusted_proxies.size() == 2);
  CHECK(r.config->server.trusted_proxies[0].contains("10.200.1.1"));
  CHECK_FALSE(r.config->server.trusted_proxies[0].contains("11.0.0.1"));
  CHECK(r.config->server.trusted_proxies[1].contains("::1"));
  CHECK_FALSE(errors_of("{}").size());
  CHECK_FALSE(load_config_text("server: {listen: 127.0.0.1:0, trusted_proxies: [10.0.0.0/33]}\n"
                               "downstreams:\n  d: {url: http://127.0.0.1:9}\n"
                               "routes:\n  - path: /a\n    calls: [{name: one, downstream: d, path: /one}]\n",
                               "t.yaml")
                  .errors.empty());
}

TEST_CASE("ip networks: prefixes, single addresses, IPv4-mapped IPv6", "[headers]") {
  std::string error;
  const auto net = ip_network::parse("192.168.0.0/16", error);
  REQUIRE(net);
  CHECK(net->contains("192.168.255.1"));
  CHECK(net->contains("::ffff:192.168.1.1"));
  CHECK_FALSE(net->contains("192.169.0.1"));
  CHECK_FALSE(net->contains("not an address"));
  const auto one = ip_network::parse("10.0.0.7", error);
  REQUIRE(one);
  CHECK(one->contains("10.0.0.7"));
  CHECK_FALSE(one->contains("10.0.0.8"));
  const auto all = ip_network::parse("0.0.0.0/0", error);
  REQUIRE(all);
  CHECK(all->contains("8.8.8.8"));
  CHECK_FALSE(ip_network::parse("10.0.0.0/", error));
  CHECK_FALSE(ip_network::parse("10.0.0.0/x", error));
  CHECK_FALSE(ip_network::parse("example.com", error));
}
