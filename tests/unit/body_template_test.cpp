// Request bodies built from parameters: values are escaped for a JSON string, so they can never end the
// string or add a member; placeholders outside strings and bad names are refused.

#include "gateway/codec/body_template.hpp"
#include "gateway/config/config_loader.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace gateway;

TEST_CASE("body template: values are escaped into their strings", "[body]") {
  std::string error;
  const auto t = body_template::parse(R"({"note":"for {user}","qty":1,"sku":"{sku}"})", error);
  REQUIRE(t);
  CHECK(t->param_names() == std::vector<std::string>{"user", "sku"});
  std::string out;
  t->expand(out, [](const std::string& name) -> std::string_view {
    return name == "sku" ? "A\",\"admin\":true,\"x\":\"" : "bob\n";
  });
  const auto parsed = nlohmann::json::parse(out);
  CHECK(parsed["sku"] == "A\",\"admin\":true,\"x\":\"");
  CHECK(parsed["note"] == "for bob\n");
  CHECK_FALSE(parsed.contains("admin"));
  CHECK_FALSE(body_template::parse(R"({"a":"{bad name}"})", error));
  // Braces that are no placeholder stay text.
  CHECK(body_template::parse(R"({"a":"{", "b":"}{x\"}"})", error));
}

TEST_CASE("call methods and bodies in the config", "[body][config]") {
  const auto load = [](const std::string& call) {
    return load_config_text(
        "server: {listen: 127.0.0.1:0}\ndownstreams:\n  d: {url: http://127.0.0.1:9}\n"
        "routes:\n  - path: /a/{sku}\n    method: POST\n    calls:\n      - {name: one, "
        "downstream: d, path: /one, " +
            call + "}\n",
        "t.yaml");
  };
  auto r = load("method: POST, body: client");
  REQUIRE(r.errors.empty());
  const auto& route = std::get<aggregate_route>(r.config->routes[0].kind);
  CHECK(route.takes_body);
  CHECK(route.calls[0].method == "POST");
  CHECK_FALSE(route.calls[0].idempotent);
  const auto built = load("method: PUT, body_template: {sku: '{sku}', qty: 2}");
  REQUIRE(built.errors.empty());
  const auto& built_route = std::get<aggregate_route>(built.config->routes[0].kind);
  CHECK_FALSE(built_route.takes_body);
  CHECK(built_route.calls[0].idempotent);
  const auto marked = load("method: POST, idempotent: true");
  INFO((marked.errors.empty() ? std::string() : marked.errors[0].message));
  REQUIRE(marked.config);
  CHECK(std::get<aggregate_route>(marked.config->routes[0].kind).calls[0].idempotent);
  CHECK_FALSE(load("body: client").errors.empty());  // GET with a body
  CHECK_FALSE(load("method: HEAD").errors.empty());
  CHECK_FALSE(load("method: POST, body: other").errors.empty());
  CHECK_FALSE(load("method: POST, body_template: {a: '{undeclared}'}").errors.empty());
  CHECK_FALSE(load("method: POST, body: client, body_template: {a: 1}").errors.empty());
}
