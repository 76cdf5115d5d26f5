// The admin listener: liveness, startup and readiness probes (readiness follows the drain and the database
// pools), the effective configuration with secrets redacted, and refusal of anything else.

#include "tests/integration/sql_support.hpp"
#include "tests/support/offer_checks.hpp"

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <thread>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

// A PostgreSQL DSN whose server refuses every connection; `extra` is appended.
std::string refused_dsn(const refused_port& refused, const std::string& extra = "") {
  return "host=127.0.0.1 port=" + std::to_string(refused.port()) +
         " dbname=offers user=gw connect_timeout=1" + extra;
}

// Polls /startupz until it answers 200: the admin listener may answer "starting" for a moment after the
// listening lines are printed, before the accept loop runs.
void wait_started(gateway_process& gw) {
  http_response res;
  for (const auto until = steady_clock::now() + 5s; steady_clock::now() < until;) {
    res = http_get(gw.admin_port(), "/startupz");
    if (res.status == 200) return;
    std::this_thread::sleep_for(10ms);
  }
  FAIL("/startupz still answers " << res.status << " " << res.body);
}

}  // namespace

TEST_CASE("admin probes /livez, /startupz and /readyz answer 200 on a running gateway", "[admin]") {
  mock_downstream mock({"--delay", "5ms"});
  gateway_process gw(seed_config{mock.url()}.yaml());
  wait_started(gw);
  http_connection admin(gw.admin_port());  // one kept-alive connection for all probes
  for (const std::string path : {"/livez", "/startupz", "/readyz", "/readyz?verbose=1"}) {
    INFO(path);
    auto res = admin.get(path);
    CHECK(res.status == 200);
    CHECK(res.body == "ok\n");
    CHECK(res.header("cache-control").value_or("") == "no-store");
  }
  check_offer(http_get(gw.port(), offer_target("A1")), "A1");
  check_clean_exit(gw);
}

TEST_CASE("admin listener answers 404 to an unknown path and 405 to a POST", "[admin]") {
  mock_downstream mock({"--delay", "5ms"});
  gateway_process gw(seed_config{mock.url()}.yaml());
  http_connection admin(gw.admin_port());
  CHECK(admin.get("/nothing-here").status == 404);
  CHECK(admin.get("/api/offer/aggregate?sku=A1").status == 404);  // the public routes are not served here
  auto post = admin.request("POST", "/readyz");                   // Content-Length: 0
  CHECK(post.status == 405);
  CHECK(post.header("allow").value_or("") == "GET, HEAD");
  CHECK(admin.get("/livez").status == 200);  // the connection is still usable

  // A method with a request body deserves the same answer, not a dropped connection.
  for (const std::string method : {"POST", "PUT"}) {
    INFO(method << " with a body");
    http_connection other(gw.admin_port());
    try {
      CHECK(other.request(method, "/readyz", {}, R"({"x":1})").status == 405);
    } catch (const http_error& e) {
      FAIL_CHECK("no answer: " << e.what());
    }
  }
  check_clean_exit(gw);
}

TEST_CASE("admin /readyz turns 503 draining at SIGTERM while the public port serves for drain_delay",
          "[admin][drain]") {
  mock_downstream mock({"--delay", "5ms"});
  gateway_process gw(seed_config{mock.url()}.yaml() + "shutdown:\n  drain_delay: 2s\n");
  wait_started(gw);
  REQUIRE(http_get(gw.admin_port(), "/readyz").status == 200);
  http_connection kept(gw.port());
  check_offer(kept.get(offer_target("D1")), "D1");

  const auto signalled = steady_clock::now();
  REQUIRE(::kill(gw.process().pid(), SIGTERM) == 0);
  http_response ready;
  while (elapsed_since(signalled) < 1500ms) {
    ready = http_get(gw.admin_port(), "/readyz");
    if (ready.status != 200) break;
    std::this_thread::sleep_for(10ms);
  }
  CHECK(ready.status == 503);
  CHECK(ready.body == "draining\n");
  CHECK(http_get(gw.admin_port(), "/livez").status == 200);

  // Until drain_delay has passed, new and kept-alive connections are served as usual.
  auto fresh = http_get(gw.port(), offer_target("D2"));
  check_offer(fresh, "D2");
  auto again = kept.get(offer_target("D3"));
  check_offer(again, "D3");
  CHECK_FALSE(again.has_header("connection"));
  INFO("served during the drain until " << elapsed_since(signalled).count() << " ms after SIGTERM");
  REQUIRE(elapsed_since(signalled) < 1800ms);  // otherwise the checks above did not test the drain delay

  // Then the idle kept-alive connection is closed and the gateway exits 0.
  std::string received;
  CHECK(kept.wait_closed_by_peer(5s, &received));
  CHECK(received.empty());
  auto status = gw.process().wait_exit(5s);
  const auto took = elapsed_since(signalled);
  INFO("exited " << took.count() << " ms after SIGTERM; stderr:\n" << gw.process().stderr_text());
  REQUIRE(status);
  CHECK(status->exited);
  CHECK(status->code == 0);
  CHECK(took >= 1900ms);
  CHECK(took < 5000ms);
}

TEST_CASE("admin /readyz is 503 while a postgres downstream cannot connect", "[admin][sql]") {
  refused_port refused;
  auto cfg = sql::postgres_config(refused_dsn(refused), sql::offer_query);
  gateway_process gw(cfg.yaml());
  wait_started(gw);
  auto ready = http_get(gw.admin_port(), "/readyz");
  INFO(ready.body);
  CHECK(ready.status == 503);
  CHECK(ready.body.find("'db' not connected") != std::string::npos);
  CHECK(http_get(gw.admin_port(), "/livez").status == 200);
  CHECK(http_get(gw.admin_port(), "/startupz").status == 200);
  // The gateway serves meanwhile: the database call falls back.
  auto res = http_get(gw.port(), "/api/sql?sku=A1");
  CHECK(res.status == 200);
  CHECK(res.degraded_calls().value_or("") == sql::call_name);
  check_clean_exit(gw);
}

TEST_CASE("admin /config shows the effective config with the postgres dsn redacted", "[admin][sql]") {
  const std::string secret = "pw-" + std::to_string(::getpid()) + "-Zq8";
  REQUIRE(::setenv("GATEWAY_TEST_DB_PASSWORD", secret.c_str(), 1) == 0);
  refused_port refused;
  auto cfg =
      sql::postgres_config(refused_dsn(refused, " password=${GATEWAY_TEST_DB_PASSWORD}"), sql::offer_query);
  gateway_process gw(cfg.yaml());

  auto res = http_get(gw.admin_port(), "/config");
  INFO(res.body);
  REQUIRE(res.status == 200);
  CHECK(res.header("content-type").value_or("").find("application/json") == 0);
  CHECK(res.body.find(secret) == std::string::npos);
  CHECK(res.body.find("<redacted>") != std::string::npos);
  auto config = res.json();
  CHECK(config["downstreams"]["db"]["dsn"] == "<redacted>");
  CHECK(config["downstreams"]["db"]["driver"] == "postgres");
  CHECK(config["routes"][0]["path"] == "/api/sql");
  CHECK(config["limits"]["max_inflight"] == 5000);  // a default, shown although not written
  CHECK(config["shutdown"]["drain_delay"] == "0ms");

  // Nor does the secret leak through the other endpoints or the logs.
  CHECK(http_get(gw.admin_port(), "/metrics").body.find(secret) == std::string::npos);
  check_clean_exit(gw);
  CHECK(gw.process().stderr_text().find(secret) == std::string::npos);
  CHECK(gw.process().stdout_text().find(secret) == std::string::npos);
  ::unsetenv("GATEWAY_TEST_DB_PASSWORD");
}
