// Live configuration: SIGHUP, a change of the file (written in place, or renamed over it as an editor or
// a Kubernetes ConfigMap does) and POST /reload apply a new configuration without a restart; a bad file
// changes nothing; downstreams whose settings did not change keep their connections; settings only a
// restart applies are reported, and stay pending (reports, /config, status page, metric) until the file
// matches what runs; and 200 clients see no failure while the configuration is reloaded again and again
// under them.

#include "tests/integration/metric_scrape.hpp"
#include "tests/support/load_clients.hpp"
#include "tests/support/offer_checks.hpp"
#include "tests/support/text_edit.hpp"

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Replaces the file as an editor does: a new file renamed over it (one inotify event, never half a file).
void replace_file(const std::string& path, const std::string& text) {
  const auto next = path + ".next";
  {
    std::ofstream out(next, std::ios::trunc);
    out << text;
  }
  REQUIRE(std::rename(next.c_str(), path.c_str()) == 0);
}

// Adds a route of its own (an aggregate of one call to `downstream`) in front of the seed route.
std::string with_route(const std::string& yaml, const std::string& path, const std::string& downstream) {
  return replace_once(yaml, "routes:\n",
                      "routes:\n  - path: " + path +
                          "\n    calls:\n      - name: only\n        downstream: " + downstream +
                          "\n        path: /coupon?sku=R1\n        fallback: {}\n");
}

// Polls the gateway's log (stderr) until it has a line containing `needle`, or `timeout` passes.
bool logged(gateway_process& gw, const std::string& needle, std::chrono::milliseconds timeout = 3000ms) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (gw.process().stderr_text().find(needle) != std::string::npos) return true;
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(50ms);
  }
}

// Adds a downstream named `name` at `url`.
std::string with_downstream(const std::string& yaml, const std::string& name, const std::string& url) {
  return replace_once(yaml, "downstreams:\n", "downstreams:\n  " + name + ":\n    url: " + url + "\n");
}

std::string without_watch(const std::string& yaml) {
  return replace_once(yaml, "server:\n", "server:\n  watch_config: false\n");
}

http_response post_reload(const gateway_process& gw, const header_list& headers = {}) {
  http_connection admin(gw.admin_port(), 10000ms);
  return admin.request("POST", "/reload", headers);
}

nlohmann::json config_of(const gateway_process& gw) {
  return nlohmann::json::parse(http_get(gw.admin_port(), "/config").body);
}

// Polls the public port until `target` answers `status`, or 5 s pass.
bool answers(const gateway_process& gw, const std::string& target, int status) {
  for (int i = 0; i < 100; ++i) {
    if (http_get(gw.port(), target).status == status) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

}  // namespace

TEST_CASE("reload: SIGHUP applies new routes and removes old ones and the version changes", "[reload]") {
  mock_downstream mock;
  seed_config cfg{mock.url()};
  gateway_process gw(without_watch(cfg.yaml()));
  const auto original = read_file(gw.config_path());
  const auto version = config_of(gw).at("version").get<std::string>();
  CHECK(version.size() == 16);
  CHECK(http_get(gw.port(), "/extra").status == 404);
  const auto before = http_get(gw.admin_port(), "/livez");
  REQUIRE(before.header("X-Config-Version"));
  CHECK(*before.header("X-Config-Version") == version);

  replace_file(gw.config_path(), with_route(original, "/extra", "coupon"));
  std::this_thread::sleep_for(700ms);  // watch_config is off: the file alone changes nothing
  CHECK(http_get(gw.port(), "/extra").status == 404);
  REQUIRE(::kill(gw.process().pid(), SIGHUP) == 0);
  REQUIRE(answers(gw, "/extra", 200));
  check_offer(http_get(gw.port(), offer_target("H1")), "H1");  // the other routes still there

  const auto now = config_of(gw);
  CHECK(now.at("version").get<std::string>() != version);
  CHECK(now.at("routes").size() == 2);
  CHECK(metric(gw, "gateway_config_reloads_total", {{"result", "success"}}) == 1);
  CHECK(metric(gw, "gateway_config_info", {{"version", now.at("version").get<std::string>()}}) == 1);

  // Back to the first file: the route is gone again.
  replace_file(gw.config_path(), original);
  REQUIRE(::kill(gw.process().pid(), SIGHUP) == 0);
  REQUIRE(answers(gw, "/extra", 404));
  CHECK(config_of(gw).at("version").get<std::string>() == version);
  CHECK(gw.running());
}

TEST_CASE("reload: a bad file changes nothing and every error is reported with its line", "[reload]") {
  mock_downstream mock;
  seed_config cfg{mock.url()};
  gateway_process gw(without_watch(cfg.yaml()));
  const auto original = read_file(gw.config_path());
  const auto version = config_of(gw).at("version").get<std::string>();

  // Two errors: an unknown key and a call to a downstream that does not exist.
  auto bad = with_route(original, "/extra", "nowhere");
  bad = replace_once(bad, "    max_connections: 64\n", "    max_conections: 64\n");
  replace_file(gw.config_path(), bad);
  const auto r = post_reload(gw);
  CHECK(r.status == 422);
  const auto report = nlohmann::json::parse(r.body);
  CHECK_FALSE(report.at("applied").get<bool>());
  CHECK(report.at("version") == version);
  const auto errors = report.at("errors").dump();
  INFO(errors);
  CHECK(errors.find(gw.config_path() + ":") != std::string::npos);
  CHECK(errors.find("max_conections") != std::string::npos);
  CHECK(errors.find("did you mean 'max_connections'") != std::string::npos);
  CHECK(errors.find("nowhere") != std::string::npos);
  REQUIRE(r.header("X-Config-Version"));
  CHECK(*r.header("X-Config-Version") == version);

  // YAML that does not parse, then a file that cannot be read: the same.
  replace_file(gw.config_path(), original + "routes: [\n");
  CHECK(post_reload(gw).status == 422);
  ::chmod(gw.config_path().c_str(), 0);
  if (::access(gw.config_path().c_str(), R_OK) != 0) CHECK(post_reload(gw).status == 422);  // not as root
  ::chmod(gw.config_path().c_str(), 0644);

  check_offer(http_get(gw.port(), offer_target("B1")), "B1");
  CHECK(http_get(gw.port(), "/extra").status == 404);
  CHECK(config_of(gw).at("version") == version);
  CHECK(metric(gw, "gateway_config_reloads_total", {{"result", "failure"}}) >= 2);
  CHECK(metric(gw, "gateway_config_reloads_total", {{"result", "success"}}) == 0);
  // The log names the problem with its place in the file.
  CHECK(logged(gw, "max_conections"));
  INFO(gw.process().stderr_text());
  CHECK(logged(gw, gw.config_path() + ":"));

  // A good file afterwards is applied.
  replace_file(gw.config_path(), with_route(original, "/extra", "coupon"));
  const auto good = post_reload(gw);
  CHECK(good.status == 200);
  CHECK(nlohmann::json::parse(good.body).at("applied").get<bool>());
  CHECK(http_get(gw.port(), "/extra").status == 200);
}

TEST_CASE("reload: downstreams whose settings did not change keep their pooled connections", "[reload]") {
  mock_downstream mock;
  seed_config cfg{mock.url()};
  cfg.threads = 1;
  gateway_process gw(without_watch(cfg.yaml()));
  const auto original = read_file(gw.config_path());
  auto ask = [&](const std::string& prefix) {
    for (int i = 0; i < 5; ++i) {
      const auto sku = prefix + std::to_string(i);
      check_offer(http_get(gw.port(), offer_target(sku)), sku);
    }
  };
  // The connections the gateway opened to the mock: each reading of /__stats is a connection of its own.
  int readings = 0;
  auto gateway_connections = [&] {
    return mock.endpoint_counter(mock.stats(), mock.port(), "connections_total") - ++readings;
  };
  ask("K");
  const auto opened = gateway_connections();
  CHECK(opened >= 6);

  // A new route and a new downstream; the seed's six are unchanged.
  replace_file(gw.config_path(),
               with_route(with_downstream(original, "extra", mock.url()), "/extra", "extra"));
  REQUIRE(post_reload(gw).status == 200);
  ask("L");
  CHECK(gateway_connections() == opened);
  CHECK(http_get(gw.port(), "/extra").status == 200);  // the new downstream: one new connection
  CHECK(gateway_connections() == opened + 1);

  // A changed downstream is a new one (its connections anew); the old one's idle connection is closed once
  // no request runs on the configuration that had it.
  replace_file(gw.config_path(),
               replace_once(original, "    connect_timeout: 100ms\n", "    connect_timeout: 150ms\n"));
  const auto changed = post_reload(gw);
  REQUIRE(changed.status == 200);
  ask("M");
  CHECK(gateway_connections() == opened + 2);
  CHECK(logged(gw, "downstream 'extra' retired"));
  // Its counters and series stay: nothing goes backwards in /metrics.
  CHECK(metric(gw, "gateway_fallbacks_total", {{"http_route", "/extra"}, {"call", "only"}}) == 0);
}

TEST_CASE("reload: settings only a restart applies are reported and keep their running values", "[reload]") {
  mock_downstream mock;
  seed_config cfg{mock.url()};
  gateway_process gw(without_watch(cfg.yaml()));
  const auto original = read_file(gw.config_path());
  auto next = replace_once(original, "  threads: 2\n", "  threads: 3\n");
  next = with_route(next, "/extra", "coupon");
  next += "log:\n  level: debug\n";
  replace_file(gw.config_path(), next);
  const auto r = post_reload(gw);
  REQUIRE(r.status == 200);
  const auto report = nlohmann::json::parse(r.body);
  CHECK(report.at("applied").get<bool>());
  CHECK(report.at("restart_required") == nlohmann::json::array({"server.threads"}));
  CHECK(http_get(gw.port(), "/extra").status == 200);
  const auto now = config_of(gw);
  CHECK(now.at("server").at("threads") == 2);
  CHECK(now.at("log").at("level") == "debug");  // applied live
  CHECK(logged(gw, "server.threads changed in the file but only a restart applies it"));
}

TEST_CASE(
    "reload: settings a restart would apply stay pending in every report, /config, the status page "
    "and a metric until the file matches what runs",
    "[reload][status]") {
  mock_downstream mock;
  seed_config cfg{mock.url()};
  auto yaml = without_watch(cfg.yaml());
  yaml += "admin:\n  listen: 127.0.0.1:0\n  token: first-admin-token-0123\n";
  gateway_process gw(yaml);
  const auto original = read_file(gw.config_path());
  const auto pending = [](const nlohmann::json& keys) {
    auto sorted = keys.get<std::vector<std::string>>();
    std::sort(sorted.begin(), sorted.end());
    return sorted;
  };
  const std::vector<std::string> both{"admin.token", "server.listen"};
  CHECK(config_of(gw).at("restart_pending").empty());
  CHECK(metric(gw, "gateway_config_restart_pending") == 0);

  auto moved = replace_once(original, "listen: 127.0.0.1:0\n  threads", "listen: 127.0.0.1:1\n  threads");
  moved = replace_once(moved, "first-admin-token-0123", "second-admin-token-0123");
  replace_file(gw.config_path(), moved);
  auto report = nlohmann::json::parse(post_reload(gw).body);
  CHECK(report.at("applied").get<bool>());
  CHECK(pending(report.at("restart_required")) == both);

  // Nothing new in the file: the process still differs from it.
  report = nlohmann::json::parse(post_reload(gw).body);
  CHECK(report.at("unchanged").get<bool>());
  CHECK(pending(report.at("restart_required")) == both);
  // A file that does not load: still pending.
  replace_file(gw.config_path(), moved + "unknown_section: 1\n");
  const auto refused = post_reload(gw);
  CHECK(refused.status == 422);
  CHECK(pending(nlohmann::json::parse(refused.body).at("restart_required")) == both);
  // Another change that applies live: still pending.
  replace_file(gw.config_path(), with_route(moved, "/extra", "coupon"));
  report = nlohmann::json::parse(post_reload(gw).body);
  CHECK(report.at("applied").get<bool>());
  CHECK(pending(report.at("restart_required")) == both);

  // /config shows what runs and, apart, what the file holds for each pending key; no secret either way.
  const auto config = config_of(gw);
  CHECK(config.at("server").at("listen") == "127.0.0.1:0");
  const auto& differs = config.at("restart_pending");
  REQUIRE(differs.size() == 2);
  CHECK(differs.at("server.listen") == nlohmann::json({{"running", "127.0.0.1:0"}, {"file", "127.0.0.1:1"}}));
  CHECK(differs.at("admin.token") == nlohmann::json({{"running", "<redacted>"}, {"file", "<redacted>"}}));
  const auto text = http_get(gw.admin_port(), "/config").body;
  CHECK(text.find("admin-token") == std::string::npos);
  // The status page's data and the page itself, and the metric.
  const auto status = nlohmann::json::parse(http_get(gw.admin_port(), "/status.json").body);
  CHECK(pending(status.at("config").at("restart_pending")) == both);
  CHECK(http_get(gw.admin_port(), "/").body.find("id=\"restart-pending\"") != std::string::npos);
  CHECK(metric(gw, "gateway_config_restart_pending") == 1);

  // The file back at the running values: nothing pending any more.
  replace_file(gw.config_path(), with_route(original, "/extra", "coupon"));
  report = nlohmann::json::parse(post_reload(gw).body);
  CHECK(report.at("applied").get<bool>());
  CHECK(report.at("restart_required").empty());
  CHECK(config_of(gw).at("restart_pending").empty());
  CHECK(nlohmann::json::parse(http_get(gw.admin_port(), "/status.json").body)
            .at("config")
            .at("restart_pending")
            .empty());
  CHECK(metric(gw, "gateway_config_restart_pending") == 0);
}

TEST_CASE("reload: a change of the file is picked up (written in place and renamed over)", "[reload]") {
  mock_downstream mock;
  seed_config cfg{mock.url()};
  gateway_process gw(cfg.yaml());
  const auto original = read_file(gw.config_path());

  replace_file(gw.config_path(), with_route(original, "/renamed", "coupon"));
  CHECK(answers(gw, "/renamed", 200));
  {
    std::ofstream out(gw.config_path(), std::ios::trunc);  // in place
    out << with_route(original, "/written", "coupon");
  }
  CHECK(answers(gw, "/written", 200));
  CHECK(http_get(gw.port(), "/renamed").status == 404);

  // A ConfigMap volume: the file is a symlink through ..data to a directory of the version, and an update
  // swaps ..data (a rename) without touching the file's own name.
  const auto dir = gw.config_path().substr(0, gw.config_path().rfind('/'));
  const auto version_dir = [&](const std::string& name, const std::string& text) {
    REQUIRE(::mkdir((dir + "/" + name).c_str(), 0755) == 0);
    std::ofstream(dir + "/" + name + "/gateway.yaml") << text;
  };
  const auto swap_data = [&](const std::string& to) {
    REQUIRE(::symlink(to.c_str(), (dir + "/..data_tmp").c_str()) == 0);
    REQUIRE(std::rename((dir + "/..data_tmp").c_str(), (dir + "/..data").c_str()) == 0);
  };
  version_dir("v1", with_route(original, "/mapped-one", "coupon"));
  swap_data("v1");
  REQUIRE(::symlink("..data/gateway.yaml", (dir + "/gateway.yaml.link").c_str()) == 0);
  REQUIRE(std::rename((dir + "/gateway.yaml.link").c_str(), gw.config_path().c_str()) == 0);
  CHECK(answers(gw, "/mapped-one", 200));
  version_dir("v2", with_route(original, "/mapped-two", "coupon"));
  swap_data("v2");
  CHECK(answers(gw, "/mapped-two", 200));
  CHECK(http_get(gw.port(), "/mapped-one").status == 404);
  CHECK(metric(gw, "gateway_config_reloads_total", {{"result", "success"}}) == 4);
  CHECK(metric(gw, "gateway_config_reloads_total", {{"result", "failure"}}) == 0);
}

TEST_CASE("reload: POST /reload takes only POST and only loopback callers or the admin token", "[reload]") {
  mock_downstream mock;
  seed_config cfg{mock.url()};
  auto yaml = without_watch(cfg.yaml());
  yaml += "admin:\n  listen: 127.0.0.1:0\n  token: s3cr3t-token-0123456789\n";
  gateway_process gw(yaml);
  CHECK(http_get(gw.admin_port(), "/reload").status == 405);
  CHECK(post_reload(gw).status == 200);  // loopback: no token needed; unchanged file
  CHECK(nlohmann::json::parse(post_reload(gw).body).at("unchanged").get<bool>());
  CHECK(config_of(gw).at("admin").at("token") == "<redacted>");
  CHECK(http_get(gw.admin_port(), "/config").body.find("s3cr3t") == std::string::npos);
}

TEST_CASE("reload under load: 200 clients and repeated reloads good and bad: no request fails",
          "[reload][load]") {
  mock_downstream mock({"--threads", "2"});
  seed_config cfg{mock.url()};
  cfg.deadline = "3s";
  gateway_process gw(without_watch(cfg.yaml()));
  const auto original = read_file(gw.config_path());
  // Good files that add and remove a route and a downstream and change a seed downstream (a new one built,
  // the old one retired under running requests), and bad ones.
  const std::vector<std::string> files{
      with_route(with_downstream(original, "extra", mock.url()), "/extra", "extra"),
      original + "routes: [\n",
      replace_once(original, "    connect_timeout: 100ms\n", "    connect_timeout: 150ms\n"),
      with_route(original, "/extra", "nowhere"),
      original,
  };
  drain_run clients(gw.port(), 200);
  const auto run_for = [&](std::chrono::milliseconds span) {
    const auto until = std::chrono::steady_clock::now() + span;
    while (std::chrono::steady_clock::now() < until) clients.poll_once(50ms);
  };
  for (int i = 0; i < 100 && !clients.all_answered(2); ++i) run_for(100ms);
  REQUIRE(clients.all_answered(2));
  int good = 0;
  int bad = 0;
  for (int round = 0; round < 4; ++round) {
    for (const auto& text : files) {
      replace_file(gw.config_path(), text);
      REQUIRE(::kill(gw.process().pid(), SIGHUP) == 0);
      run_for(150ms);
      const bool valid =
          text.find("routes: [") == std::string::npos && text.find("nowhere") == std::string::npos;
      (valid ? good : bad) += 1;
    }
  }
  run_for(500ms);
  std::string listed;
  for (std::size_t i = 0; i < clients.failures.size() && i < 10; ++i) listed += clients.failures[i] + "\n";
  INFO(clients.failures.size() << " failures:\n" << listed);
  CHECK(clients.failures.empty());
  CHECK(clients.answered_before > 1000);
  clients.close_all("the test ended");
  // Every reload was seen (no two files in a row are the same, which would be skipped as unchanged).
  const auto reloads_ok = metric(gw, "gateway_config_reloads_total", {{"result", "success"}});
  const auto reloads_bad = metric(gw, "gateway_config_reloads_total", {{"result", "failure"}});
  CHECK(reloads_bad == bad);
  CHECK(reloads_ok == good);
  CHECK(gw.running());
}

TEST_CASE("reload: a new downstream named by a host name is resolved and answers", "[reload]") {
  // The resolver took names only before it started; a downstream a reload adds must be resolved too. One
  // name from the start, so that its thread already runs (and sleeps until that name's next refresh).
  mock_downstream mock;
  seed_config cfg{mock.url()};
  cfg.url_override["coupon"] = "http://localhost:" + std::to_string(mock.port());
  gateway_process gw(without_watch(cfg.yaml()));
  const auto original = read_file(gw.config_path());
  const auto by_name = "http://localhost:" + std::to_string(mock.port());
  replace_file(gw.config_path(), with_route(with_downstream(original, "named", by_name), "/named", "named"));
  REQUIRE(post_reload(gw).status == 200);
  const auto r = http_get(gw.port(), "/named");
  INFO(r.body);
  CHECK(r.status == 200);
  CHECK_FALSE(r.has_header("x-degraded"));
}

TEST_CASE("reload: once a request has run on a new configuration no later request runs on the old one",
          "[reload]") {
  mock_downstream mock;
  seed_config cfg{mock.url()};
  gateway_process gw(replace_once(cfg.yaml(), "  threads: 2\n", "  threads: 4\n"));
  const auto original = read_file(gw.config_path());
  // Each round's file adds its own route and drops the previous round's. Clients on new connections
  // (spread over the I/O threads) poll the new route; once one has it, the old route must be gone for
  // every request after, on whichever I/O thread it lands. And after POST /reload has answered, the new
  // route is there for every request at once.
  int stale = 0;
  int uncounted = 0;
  for (int round = 0; round < 30; ++round) {
    const auto path = "/round-" + std::to_string(round);
    const auto before = "/round-" + std::to_string(round - 1);
    replace_file(gw.config_path(), with_route(original, path, "coupon"));
    if (round % 2 == 1) REQUIRE(post_reload(gw).status == 200);  // else the file watch applies it
    std::vector<std::thread> clients;
    std::atomic<int> wrong{0};
    for (int c = 0; c < 6; ++c) {
      clients.emplace_back([&] {
        if (round % 2 == 1) {
          if (http_get(gw.port(), path).status != 200) wrong.fetch_add(1);
        } else if (!answers(gw, path, 200)) {
          wrong.fetch_add(1);
        }
        for (int i = 0; i < 4 && round > 0; ++i) {
          if (http_get(gw.port(), before).status != 404) wrong.fetch_add(1);
        }
      });
    }
    for (auto& t : clients) t.join();
    stale += wrong.load();
    // Whoever has seen the new configuration answer finds the reload counted.
    uncounted += metric(gw, "gateway_config_reloads_total", {{"result", "success"}}) != round + 1;
  }
  CHECK(stale == 0);
  CHECK(uncounted == 0);
}
