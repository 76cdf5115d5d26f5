// JWT keys fetched over https (auth.jwt.jwks_url) from the mock, which serves the JWKS on its TLS listener
// (certificate from a test CA): rotation picked up through an unknown kid, a key that leaves the set, the
// endpoint failing at start (503 until the keys come) and later (the last keys stay).

#include "tests/support/processes.hpp"

#include <catch2/catch.hpp>
#include "tests/support/jwt_signer.hpp"
#include "tests/support/tls_files.hpp"

#include <chrono>
#include <functional>
#include <regex>
#include <string>
#include <thread>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string es256_token(EVP_PKEY* key, const std::string& kid) {
  return jwt_test::token(key, "ES256", R"({"alg":"ES256","kid":")" + kid + "\"}",
                         R"({"sub":"user-1","exp":)" + std::to_string(now_s() + 600) + "}");
}

std::string jwks_of(std::initializer_list<std::pair<EVP_PKEY*, std::string>> keys) {
  std::string out = R"({"keys":[)";
  for (const auto& [key, kid] : keys) out += (out.back() == '[' ? "" : ",") + jwt_test::jwk(key, kid);
  return out + "]}";
}

// A mock with a TLS listener that serves the JWKS at /jwks (its plain listener takes the calls and the
// control requests), and a gateway whose one route verifies tokens against it.
struct jwks_fixture {
  tls_files certs;
  mock_downstream mock{
      {"--tls-listen", "127.0.0.1:0", "--tls-cert", certs.server_cert, "--tls-key", certs.server_key}};
  std::uint16_t tls_port = 0;
  std::unique_ptr<gateway_process> gw;
  std::chrono::steady_clock::duration startup{};  // from the gateway's launch to its listening

  explicit jwks_fixture(const std::string& jwks, const std::string& start_wait = "3s",
                        const std::string& refresh = "60m",
                        const std::function<void(mock_downstream&)>& before_start = {}) {
    const auto groups =
        mock.process().wait_for_line(std::regex(R"(listening on [0-9.]+:([0-9]+) \(tls\))"), 10s);
    if (!groups) throw std::runtime_error("mock-downstream did not report its TLS listener");
    tls_port = static_cast<std::uint16_t>(std::stoi((*groups)[1]));
    mock.set_body("jwks", jwks);
    mock.set_body("whoami", R"({"user":"{header.x-user-id}"})");
    if (before_start) before_start(mock);
    const auto launched = std::chrono::steady_clock::now();
    gw = std::make_unique<gateway_process>(
        "server:\n  listen: 127.0.0.1:0\n  threads: 2\ndownstreams:\n  mock:\n    url: " + mock.url() +
        "\nroutes:\n  - path: /api/me\n    response: object\n    auth:\n      jwt:\n"
        "        jwks_url: https://127.0.0.1:" +
        std::to_string(tls_port) + "/jwks\n        jwks_tls: {ca_file: " + certs.ca_cert +
        ", server_name: localhost}\n        refresh: " + refresh +
        "\n        min_refresh: 200ms\n        start_wait: " + start_wait +
        "\n        forward_claims: {sub: X-User-Id}\n"
        "    calls:\n      - {name: me, downstream: mock, path: /whoami}\n");
    startup = std::chrono::steady_clock::now() - launched;
  }

  unsigned status(const std::string& token) {
    return http_get(gw->port(), "/api/me", {{"Authorization", "Bearer " + token}}).status;
  }
  // Polls until `token` gets `wanted` (at most 10 s); the last status.
  unsigned until(const std::string& token, unsigned wanted) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    auto got = status(token);
    while (got != wanted && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(50ms);
      got = status(token);
    }
    return got;
  }
};

}  // namespace

TEST_CASE(
    "a JWKS fetched over https is fetched again for an unknown kid, at most once per min_refresh: a "
    "new key is taken up, a key that left is refused, a failing endpoint keeps the last keys",
    "[edge][jwks]") {
  // refresh: 60m, so only a token with an unknown kid can make the gateway fetch the set again.
  const auto& k = jwt_test::keys();
  jwks_fixture f(jwks_of({{k.ec256.get(), "one"}}));
  const auto first = es256_token(k.ec256.get(), "one");
  const auto second = es256_token(k.ec256_other.get(), "two");
  const auto stranger = es256_token(k.ec256_other.get(), "three");  // a kid no set here holds
  const auto r = http_get(f.gw->port(), "/api/me", {{"Authorization", "Bearer " + first}});
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK(r.json()["me"]["user"] == "user-1");
  CHECK(f.status(second) == 401);

  // A burst of unknown kids: a fetch or two, not one per request.
  const auto fetched = [&] { return f.mock.path_counter(f.mock.stats(), "jwks", "requests"); };
  const auto before = fetched();
  for (int i = 0; i < 30; ++i) CHECK(f.status(stranger) == 401);
  std::this_thread::sleep_for(500ms);
  const auto burst = fetched() - before;
  CHECK(burst >= 1);
  CHECK(burst <= 4);

  // Rotation: the set gains "two"; a token naming it makes the gateway fetch again.
  f.mock.set_body("jwks", jwks_of({{k.ec256.get(), "one"}, {k.ec256_other.get(), "two"}}));
  CHECK(f.until(second, 200) == 200);
  CHECK(f.status(first) == 200);

  // "one" leaves the set: once a fetch has happened (an unknown kid asks for one), its tokens are refused,
  // although they verified, and were cached, before.
  f.mock.set_body("jwks", jwks_of({{k.ec256_other.get(), "two"}}));
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (f.status(first) != 401 && std::chrono::steady_clock::now() < deadline) {
    f.status(stranger);
    std::this_thread::sleep_for(100ms);
  }
  CHECK(f.status(first) == 401);
  CHECK(f.status(second) == 200);

  // The endpoint fails: fetches fail, the keys fetched before stay in use.
  f.mock.control("jwks", "fail");
  const auto failing_from = fetched();
  for (int i = 0; i < 10; ++i) {
    f.status(stranger);
    std::this_thread::sleep_for(100ms);
  }
  CHECK(fetched() > failing_from);
  CHECK(f.status(second) == 200);
  CHECK(f.status(first) == 401);
}

TEST_CASE(
    "a JWKS endpoint that fails at start: the gateway starts within start_wait, answers 503, then "
    "verifies once a fetch succeeds",
    "[edge][jwks]") {
  const auto& k = jwt_test::keys();
  jwks_fixture f(jwks_of({{k.ec256.get(), "one"}}), "500ms", "60m",
                 [](mock_downstream& m) { m.control("jwks", "fail"); });
  CHECK(f.startup < 500ms + 2s);  // start_wait, and the process's own start with a generous margin
  const auto token = es256_token(k.ec256.get(), "one");
  CHECK(f.status(token) == 503);
  f.mock.control("jwks", "ok");
  CHECK(f.until(token, 200) == 200);
}
