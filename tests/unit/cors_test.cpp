// CORS decisions: which fields an answer carries for an origin, and how a preflight is answered.

#include "gateway/server/cors.hpp"
#include "gateway/config/config_loader.hpp"

#include <catch2/catch.hpp>

using namespace gateway;

namespace {

cors_settings shop_cors(bool credentials = false) {
  cors_settings c;
  c.allow_origins = {"https://shop.example"};
  c.allow_headers = {"Authorization", "Content-Type"};
  c.expose_headers = {"X-Degraded", "X-Request-Id"};
  c.allow_credentials = credentials;
  c.max_age = std::chrono::minutes(5);
  return c;
}

}  // namespace

TEST_CASE("cors: an allowed origin may read the answer, others get nothing but Vary", "[cors]") {
  const auto c = shop_cors();
  CHECK(cors_answer_fields(c, "https://shop.example") ==
        "Access-Control-Allow-Origin: https://shop.example\r\nVary: Origin\r\n"
        "Access-Control-Expose-Headers: X-Degraded, X-Request-Id\r\n");
  CHECK(cors_answer_fields(c, "https://evil.example") == "Vary: Origin\r\n");
  CHECK(cors_answer_fields(c, "") == "Vary: Origin\r\n");
  auto any = c;
  any.allow_origins = {"*"};
  any.expose_headers.clear();
  CHECK(cors_answer_fields(any, "https://x.example") == "Access-Control-Allow-Origin: *\r\n");
  CHECK(cors_answer_fields(shop_cors(true), "https://shop.example")
            .find("Access-Control-Allow-Credentials: true") != std::string::npos);
}

TEST_CASE("cors: preflights check origin, method and headers", "[cors]") {
  const auto c = shop_cors();
  auto a = cors_preflight(c, "GET", "https://shop.example", "GET", "authorization, content-type");
  CHECK(a.status == 204);
  CHECK(a.fields ==
        "Access-Control-Allow-Origin: https://shop.example\r\nVary: Origin\r\n"
        "Access-Control-Allow-Methods: GET\r\nAccess-Control-Allow-Headers: Authorization, Content-Type\r\n"
        "Access-Control-Max-Age: 300\r\n");
  CHECK(cors_preflight(c, "GET", "https://evil.example", "GET", "").status == 403);
  CHECK(cors_preflight(c, "GET", "https://shop.example", "DELETE", "").status == 403);
  a = cors_preflight(c, "GET", "https://shop.example", "GET", "X-Custom");
  CHECK(a.status == 403);
  CHECK(a.error.find("X-Custom") != std::string::npos);
  auto methods = c;
  methods.allow_methods = {"GET", "POST"};
  CHECK(cors_preflight(methods, "GET", "https://shop.example", "POST", "").status == 204);
}

TEST_CASE("cors config: origins are checked, credentials with '*' refused", "[cors][config]") {
  const auto load = [](const std::string& cors) {
    return load_config_text(
        "server: {listen: 127.0.0.1:0}\ndownstreams:\n  d: {url: http://127.0.0.1:9}\n"
        "routes:\n  - path: /a\n    cors: " +
            cors + "\n    calls: [{name: one, downstream: d, path: /one}]\n",
        "t.yaml");
  };
  CHECK(load("{allow_origins: ['https://a.example', 'http://b.example:8080'], max_age: 1m}").errors.empty());
  CHECK_FALSE(load("{allow_origins: []}").errors.empty());
  CHECK_FALSE(load("{allow_origins: [a.example]}").errors.empty());
  CHECK_FALSE(load("{allow_origins: ['https://a.example/path']}").errors.empty());
  CHECK_FALSE(load("{allow_origins: ['*'], allow_credentials: true}").errors.empty());
  CHECK_FALSE(load("{allow_origins: ['*'], allow_headers: ['bad header']}").errors.empty());
}
