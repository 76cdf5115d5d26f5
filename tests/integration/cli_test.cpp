// The command line: --check validates a config and reports FILE:LINE:COL for each problem, --version and
// --help answer and exit.

#include "tests/support/offer_checks.hpp"
#include "tests/support/text_edit.hpp"

#include <filesystem>
#include <sstream>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

// Every "FILE:LINE:COL: message" line of `out` about `file`, as (line, col).
std::vector<std::pair<int, int>> reported_positions(const std::string& out, const std::string& file) {
  std::vector<std::pair<int, int>> found;
  std::regex pattern("^" + std::regex_replace(file, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                     R"(:([0-9]+):([0-9]+): .+)");
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, pattern)) found.emplace_back(std::stoi(m[1]), std::stoi(m[2]));
  }
  return found;
}

bool reported_line(const std::vector<std::pair<int, int>>& positions, int line) {
  return std::any_of(positions.begin(), positions.end(), [&](const auto& p) { return p.first == line; });
}

// Runs `gateway --check file`, expects the exit code 2 of a rejected config, and returns what stderr
// reported for the file as (line, column) pairs, with stderr itself.
struct rejection {
  std::string err;
  std::vector<std::pair<int, int>> positions;
};
rejection check_rejected(const std::string& file) {
  auto result = run_command({GATEWAY_BIN, "--check", file}, 10s);
  INFO("stdout: " << result.out << "\nstderr: " << result.err);
  CHECK(result.status.exited);
  CHECK(result.status.code == 2);
  return {result.err, reported_positions(result.err, file)};
}

}  // namespace

TEST_CASE("gateway --check accepts the shipped default config", "[cli]") {
  // Run where its SQLite file is (data/offers.db, relative to the working directory), as the image does.
  temp_dir dir;
  std::filesystem::create_directory(dir.file("data"));
  dir.write("data/offers.db", "");
  std::string file = std::string(SOURCE_DIR) + "/config/gateway.yaml";
  auto result = run_command(
      {"/bin/sh", "-c", "cd '" + dir.path() + "' && exec " GATEWAY_BIN " --check '" + file + "'"}, 10s);
  INFO("stdout: " << result.out << "\nstderr: " << result.err);
  CHECK(result.status.exited);
  CHECK(result.status.code == 0);
}

TEST_CASE("gateway --check --offline checks a deploy config without the files the pod would open", "[cli]") {
  // A SQLite database, a CA and a client certificate that exist only in the pod: --check opens them and
  // refuses the config here; --check --offline checks everything else, for a pipeline before the deploy.
  temp_dir dir;
  const std::string yaml = R"(server:
  listen: 127.0.0.1:0
downstreams:
  offers:
    kind: sql
    driver: sqlite
    database: /var/lib/gateway/data/missing-offers.db
    query: "SELECT sku FROM offers WHERE sku = :sku"
  price:
    url: https://price.internal:8443
    tls: {ca_file: /etc/gateway/tls/missing-ca.crt, cert_file: /etc/gateway/tls/missing.crt, key_file: /etc/gateway/tls/missing.key}
routes:
  - path: /api/offer/{sku}
    calls:
      - name: offers
        downstream: offers
      - name: price
        downstream: price
        path: /price/{sku}
)";
  const auto file = dir.write("gateway.yaml", yaml);
  const auto online = run_command({GATEWAY_BIN, "--check", file}, 10s);
  INFO("--check stderr: " << online.err);
  CHECK(online.status.code == 2);
  CHECK(online.err.find("missing-ca.crt") != std::string::npos);

  const auto offline = run_command({GATEWAY_BIN, "--check", "--offline", file}, 10s);
  INFO("--check --offline stdout: " << offline.out << " stderr: " << offline.err);
  CHECK(offline.status.exited);
  CHECK(offline.status.code == 0);
  CHECK(offline.out.find(file + ": ok") != std::string::npos);

  // Everything that needs no file is still checked.
  const auto broken =
      dir.write("broken.yaml", replace_once(yaml, "path: /price/{sku}\n", "path: /price/{skew}\n"));
  const auto refused = run_command({GATEWAY_BIN, "--check", "--offline", broken}, 10s);
  CHECK(refused.status.code == 2);
  CHECK(refused.err.find("skew") != std::string::npos);

  // The shipped deploy configs, which name the pod's paths.
  for (const auto* shipped :
       {"/deploy/base/config/gateway.yaml", "/deploy/overlays/postgres/config/gateway.yaml"}) {
    // The environment's values are still read (the postgres DSN's password): a pipeline sets dummy ones.
    const auto r = run_command({"/usr/bin/env", "DB_PASSWORD=x", GATEWAY_BIN, "--check", "--offline",
                                std::string(SOURCE_DIR) + shipped},
                               10s);
    INFO(shipped << ": " << r.err);
    CHECK(r.status.code == 0);
  }
}

TEST_CASE("gateway --check refuses listeners that clash through an IPv4-mapped IPv6 address", "[cli]") {
  temp_dir dir;
  std::string yaml = replace_once(seed_config{"http://127.0.0.1:9"}.yaml(), "  listen: 127.0.0.1:0\n",
                                  "  listen: '[::ffff:127.0.0.1]:7000'\n");
  yaml = replace_once(yaml, "downstreams:\n", "admin:\n  listen: 127.0.0.1:7000\ndownstreams:\n");
  auto file = dir.write("clash.yaml", yaml);
  INFO("config:\n" << yaml);
  auto [err, positions] = check_rejected(file);
  INFO("stderr: " << err);
  CHECK(positions.size() == 1);
  CHECK(reported_line(positions, line_of(yaml, "listen: 127.0.0.1:7000")));
  CHECK(err.find("the admin listener and the public listener overlap") != std::string::npos);
}

TEST_CASE("gateway --check accepts the configs these tests generate", "[cli]") {
  temp_dir dir;
  seed_config cfg{"http://127.0.0.1:9"};
  cfg.response = "object";
  cfg.call_timeout["coupon"] = "300ms";
  cfg.required_calls = {"inventory"};
  cfg.fields["inventory"] = {"stock"};
  auto file = dir.write("ok.yaml", cfg.yaml());
  auto result = run_command({GATEWAY_BIN, "--check", file}, 10s);
  INFO("config:\n" << cfg.yaml() << "\nstderr: " << result.err);
  CHECK(result.status.exited);
  CHECK(result.status.code == 0);
}

TEST_CASE("gateway --check reports an unknown key with its file, line and column and exits 2", "[cli]") {
  temp_dir dir;
  std::string yaml = replace_once(seed_config{"http://127.0.0.1:9"}.yaml(), "    max_connections: 64\n",
                                  "    max_connections: 64\n    max_conections: 10\n");
  int line = line_of(yaml, "max_conections");
  REQUIRE(line > 0);
  auto file = dir.write("typo.yaml", yaml);

  auto [err, positions] = check_rejected(file);
  INFO("stderr: " << err);
  REQUIRE_FALSE(positions.empty());
  CHECK(positions.size() == 1);
  CHECK(reported_line(positions, line));
  CHECK(positions.front().second == 5);  // the key starts in column 5
  CHECK(err.find("max_conections") != std::string::npos);
}

TEST_CASE("gateway --check reports a call naming an unknown downstream at its line", "[cli]") {
  temp_dir dir;
  std::string yaml =
      replace_once(seed_config{"http://127.0.0.1:9"}.yaml(), "downstream: coupon\n", "downstream: voucher\n");
  int line = line_of(yaml, "downstream: voucher");
  REQUIRE(line > 0);
  auto file = dir.write("unknown-downstream.yaml", yaml);

  auto [err, positions] = check_rejected(file);
  INFO("stderr: " << err);
  REQUIRE_FALSE(positions.empty());
  CHECK(reported_line(positions, line));
  CHECK(err.find("voucher") != std::string::npos);
}

TEST_CASE("gateway --check reports every problem, not only the first", "[cli]") {
  temp_dir dir;
  std::string yaml = seed_config{"http://127.0.0.1:9"}.yaml();
  yaml = replace_once(yaml, "    deadline: 800ms\n", "    deadline: soon\n");
  yaml = replace_once(yaml, "  threads: 2\n", "  threads: 2\n  colour: blue\n");
  yaml = replace_once(yaml, "downstream: recommendation\n", "downstream: nowhere\n");
  auto file = dir.write("many.yaml", yaml);

  INFO("config:\n" << yaml);
  auto [err, positions] = check_rejected(file);
  INFO("stderr: " << err);
  CHECK(reported_line(positions, line_of(yaml, "deadline: soon")));
  CHECK(reported_line(positions, line_of(yaml, "colour: blue")));
  CHECK(reported_line(positions, line_of(yaml, "downstream: nowhere")));
}

TEST_CASE("gateway --check on a file that is not valid YAML or does not exist exits 2", "[cli]") {
  temp_dir dir;
  auto broken = dir.write("broken.yaml", "server:\n  listen: [127.0.0.1:0\n  threads: 2\n");
  auto result = run_command({GATEWAY_BIN, "--check", broken}, 10s);
  INFO("stderr: " << result.err);
  CHECK(result.status.code == 2);
  CHECK(result.err.find(broken + ":") != std::string::npos);

  auto missing = dir.file("missing.yaml");
  result = run_command({GATEWAY_BIN, "--check", missing}, 10s);
  INFO("stderr: " << result.err);
  CHECK(result.status.code == 2);
  CHECK(result.err.find(missing) != std::string::npos);
}

TEST_CASE("the gateway refuses to start with a bad config", "[cli]") {
  temp_dir dir;
  auto file = dir.write("bad.yaml", "server:\n  listen: 127.0.0.1:0\n  bogus: 1\n");
  auto result = run_command({GATEWAY_BIN, "--config", file}, 10s);
  INFO("stdout: " << result.out << "\nstderr: " << result.err);
  CHECK(result.status.exited);
  CHECK(result.status.code != 0);
  CHECK(result.out.find("listening on") == std::string::npos);
}

TEST_CASE("gateway --version and --help answer and exit 0", "[cli]") {
  auto version = run_command({GATEWAY_BIN, "--version"}, 10s);
  INFO("stdout: " << version.out << "\nstderr: " << version.err);
  CHECK(version.status.code == 0);
  CHECK(std::regex_search(version.out, std::regex(R"([0-9]+\.[0-9]+\.[0-9]+)")));

  auto help = run_command({GATEWAY_BIN, "--help"}, 10s);
  INFO("stdout: " << help.out << "\nstderr: " << help.err);
  CHECK(help.status.code == 0);
  CHECK((help.out + help.err).find("--config") != std::string::npos);
  CHECK((help.out + help.err).find("--check") != std::string::npos);
}

TEST_CASE("gateway --check on a missing file says why and exits 2", "[cli]") {
  temp_dir dir;
  auto missing = dir.file("missing.yaml");
  auto result = run_command({GATEWAY_BIN, "--check", missing}, 10s);
  INFO("stdout: " << result.out << "\nstderr: " << result.err);
  CHECK(result.status.exited);
  CHECK(result.status.code == 2);
  CHECK(result.err.find(missing + ": cannot open file: No such file or directory") != std::string::npos);
}

TEST_CASE("gateway --check reports invalid UTF-8 in a fallback at its line and exits 2", "[cli]") {
  temp_dir dir;
  std::string yaml =
      replace_once(seed_config{"http://127.0.0.1:9"}.yaml(), "fallback: {priceCent: -1, stock: 0}",
                   "fallback: {priceCent: -1, stock: 0, note: \"caf\xe9\"}");
  int line = line_of(yaml, "caf\xe9");
  REQUIRE(line > 0);
  auto file = dir.write("latin1.yaml", yaml);

  auto [err, positions] = check_rejected(file);
  INFO("stderr: " << err);
  CHECK(positions.size() == 1);
  CHECK(reported_line(positions, line));
  CHECK(err.find("not valid UTF-8") != std::string::npos);
}
