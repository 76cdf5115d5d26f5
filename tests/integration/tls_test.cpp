// https downstreams against the mock's HTTPS endpoints, with certificates made for each test (openssl
// command line): verification against a CA file, a certificate the CA did not sign, a name that does not
// match, mutual TLS, connection reuse and session resumption, a server that never answers the handshake,
// and the files checked at load.

#include "tests/integration/metric_scrape.hpp"
#include "tests/support/loopback_socket.hpp"
#include "tests/support/offer_checks.hpp"
#include "tests/support/tls_files.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

using namespace test_support;
using namespace std::chrono_literals;

namespace {

// A mock with one plain endpoint (control requests) and one HTTPS endpoint serving `cert` and `key`.
struct tls_mock {
  tls_mock(const std::string& cert, const std::string& key, const std::vector<std::string>& more = {})
      : mock(args(cert, key, more)) {
    const auto groups =
        mock.process().wait_for_line(std::regex(R"(listening on [0-9.]+:([0-9]+) \(tls\))"), 10s);
    if (!groups) throw std::runtime_error("mock-downstream did not report its TLS listener");
    tls_port = static_cast<std::uint16_t>(std::stoi((*groups)[1]));
  }
  static std::vector<std::string> args(const std::string& cert, const std::string& key,
                                       const std::vector<std::string>& more) {
    std::vector<std::string> a{"--tls-listen", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(tls_port); }
  long long handshakes(const std::string& which) {
    const auto s = mock.stats();
    return s.contains("handshakes") ? s["handshakes"].value(which, 0LL) : 0;
  }

  mock_downstream mock;
  std::uint16_t tls_port = 0;
};

// One route, /api/tls?sku=, with one call "secure" to the downstream at `url`, whose `tls` section (the
// text inside the braces) is `tls`.
struct tls_config {
  tls_config(std::string to, std::string section) : url(std::move(to)), tls(std::move(section)) {}

  std::string url;
  std::string tls;
  bool required = false;
  std::string deadline = "800ms";
  std::string connect_timeout = "500ms";
  std::string downstream_extra;

  std::string yaml() const {
    std::string y = "server:\n  listen: 127.0.0.1:0\n  threads: 1\ndownstreams:\n  secure:\n";
    y += "    url: " + url + "\n    connect_timeout: " + connect_timeout + "\n    max_connections: 8\n";
    if (!tls.empty()) y += "    tls: {" + tls + "}\n";
    y += downstream_extra;
    y += "routes:\n  - path: /api/tls\n    deadline: " + deadline + "\n";
    y += "    params:\n      sku: {required: true}\n    calls:\n";
    y += "      - name: secure\n        downstream: secure\n        path: /coupon?sku={sku}\n";
    y += std::string("        required: ") + (required ? "true" : "false") + "\n";
    y += "        fallback: {priceCent: -1, stock: 0}\n";
    return y;
  }
};

std::string target(const std::string& sku) {
  return "/api/tls?sku=" + sku;
}

void check_answered(const http_response& res, const std::string& sku) {
  INFO("status " << res.status << ", body " << res.body);
  REQUIRE(res.status == 200);
  CHECK_FALSE(res.has_header("x-degraded"));
  const auto body = res.json();
  REQUIRE(body.is_array());
  REQUIRE(body.size() == 1);
  check_healthy_entry(body[0], "secure", sku);
}

void check_fell_back(const http_response& res) {
  INFO("status " << res.status << ", body " << res.body);
  REQUIRE(res.status == 200);
  CHECK(res.degraded_calls() == "secure");
  const auto body = res.json();
  REQUIRE(body.is_array());
  REQUIRE(body.size() == 1);
  check_fallback_entry(body[0], "secure");
}

// The 502 of a required call, whose message names why the call failed.
void check_failed_with(const http_response& res, const std::string& why) {
  INFO("status " << res.status << ", body " << res.body);
  CHECK(res.status == 502);
  CHECK(res.body.find(why) != std::string::npos);
}

}  // namespace

TEST_CASE("tls: an https downstream verified against its ca_file answers normally", "[tls]") {
  tls_files certs;
  tls_mock mock(certs.server_cert, certs.server_key);
  gateway_process gw(tls_config{mock.url(), "ca_file: " + certs.ca_cert}.yaml());

  for (int i = 0; i < 3; ++i)
    check_answered(http_get(gw.port(), target("T" + std::to_string(i))), "T" + std::to_string(i));
  CHECK(mock.handshakes("tls") == 1);  // one connection, kept alive
  CHECK(metric(gw, "gateway_downstream_tls_handshakes_total",
               {{"downstream", "secure"}, {"resumed", "false"}}) == 1);
  CHECK(metric(gw, "gateway_downstream_calls_total", {{"downstream", "secure"}, {"outcome", "ok"}}) == 3);

  // /config shows the paths, never what the files hold.
  const auto config = http_get(gw.admin_port(), "/config").json();
  const auto& tls = config["downstreams"]["secure"]["tls"];
  CHECK(tls["ca_file"] == certs.ca_cert);
  CHECK(tls["verify"] == true);
  CHECK(tls["key_file"] == "");
}

TEST_CASE(
    "tls: a certificate the CA did not sign fails the call and the fallback serves, verify: false accepts it",
    "[tls]") {
  tls_files certs;
  tls_mock mock(certs.rogue_cert, certs.rogue_key);
  {
    gateway_process gw(tls_config{mock.url(), "ca_file: " + certs.ca_cert}.yaml());
    check_fell_back(http_get(gw.port(), target("R1")));
    CHECK(http_get(gw.port(), "/api/tls?sku=R2").status == 200);  // still up, still answering
    CHECK(gw.running());
    CHECK(metric(gw, "gateway_downstream_calls_total", {{"downstream", "secure"}, {"outcome", "tls"}}) == 2);
  }
  {
    tls_config required{mock.url(), "ca_file: " + certs.ca_cert};
    required.required = true;
    gateway_process gw(required.yaml());
    check_failed_with(http_get(gw.port(), target("R3")), "TLS certificate not trusted");
  }
  {
    gateway_process gw(tls_config{mock.url(), "verify: false"}.yaml());
    check_answered(http_get(gw.port(), target("R4")), "R4");
  }
  CHECK(mock.mock.path_counter(mock.mock.stats(), "coupon", "requests") == 1);  // only the unverified call
}

TEST_CASE("tls: a server_name the certificate does not hold fails verification, one it holds passes",
          "[tls]") {
  tls_files certs;
  tls_mock mock(certs.server_cert, certs.server_key);
  {
    tls_config cfg{mock.url(), "ca_file: " + certs.ca_cert + ", server_name: other.example"};
    cfg.required = true;
    gateway_process gw(cfg.yaml());
    check_failed_with(http_get(gw.port(), target("N1")), "TLS certificate name mismatch");
  }
  {
    gateway_process gw(
        tls_config{mock.url(), "ca_file: " + certs.ca_cert + ", server_name: localhost"}.yaml());
    check_answered(http_get(gw.port(), target("N2")), "N2");
  }
}

TEST_CASE("tls: a server that requires a client certificate gets it from cert_file and key_file (mTLS)",
          "[tls]") {
  tls_files certs;
  tls_mock mock(certs.server_cert, certs.server_key, {"--tls-client-ca", certs.ca_cert});
  {
    gateway_process gw(tls_config{mock.url(), "ca_file: " + certs.ca_cert}.yaml());
    check_fell_back(http_get(gw.port(), target("M1")));
  }
  {
    tls_config required{mock.url(), "ca_file: " + certs.ca_cert};
    required.required = true;
    gateway_process gw(required.yaml());
    check_failed_with(http_get(gw.port(), target("M0")), "TLS client certificate required");
  }
  {
    gateway_process gw(tls_config{mock.url(), "ca_file: " + certs.ca_cert + ", cert_file: " +
                                                  certs.client_cert + ", key_file: " + certs.client_key}
                           .yaml());
    check_answered(http_get(gw.port(), target("M2")), "M2");
    check_answered(http_get(gw.port(), target("M3")), "M3");
  }
  CHECK(mock.mock.path_counter(mock.mock.stats(), "coupon", "requests") == 2);
}

TEST_CASE("tls: a rotated client certificate is picked up without a restart", "[tls][reload]") {
  tls_files certs;
  tls_mock mock(certs.server_cert, certs.server_key, {"--tls-client-ca", certs.ca_cert});
  const auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  // The files the gateway names hold a certificate the mock's CA did not sign, at first. A rotation
  // writes new files and renames them over (as a Secret volume's update does).
  const auto cert = certs.write("current.crt", read(certs.rogue_cert));
  const auto key = certs.write("current.key", read(certs.rogue_key));
  const auto rotate = [&](const std::string& to_cert, const std::string& to_key) {
    certs.write("next.crt", read(to_cert));
    certs.write("next.key", read(to_key));
    REQUIRE(std::rename((cert.substr(0, cert.rfind('/')) + "/next.key").c_str(), key.c_str()) == 0);
    REQUIRE(std::rename((cert.substr(0, cert.rfind('/')) + "/next.crt").c_str(), cert.c_str()) == 0);
  };
  const auto answers_within = [&](const gateway_process& gw, const std::string& sku,
                                  std::chrono::seconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      const auto res = http_get(gw.port(), target(sku));
      if (res.status == 200 && !res.has_header("x-degraded")) return true;
      std::this_thread::sleep_for(200ms);
    }
    return false;
  };
  const auto section = "ca_file: " + certs.ca_cert + ", cert_file: " + cert + ", key_file: " + key;
  SECTION("the files are checked every 5 s while the configuration is watched") {
    gateway_process gw(tls_config{mock.url(), section}.yaml());
    check_fell_back(http_get(gw.port(), target("R1")));
    rotate(certs.client_cert, certs.client_key);
    CHECK(answers_within(gw, "R2", 15s));
    CHECK(gw.process().stderr_text().find("downstream 'secure': its TLS files changed") != std::string::npos);
    CHECK(metric(gw, "gateway_config_reloads_total", {{"result", "success"}}) == 1);
    // Rotated back to a certificate the CA did not sign: the calls fall back again.
    rotate(certs.rogue_cert, certs.rogue_key);
    const auto until = std::chrono::steady_clock::now() + 15s;
    bool fell_back = false;
    while (!fell_back && std::chrono::steady_clock::now() < until) {
      fell_back = http_get(gw.port(), target("R3")).degraded_calls() == "secure";
      if (!fell_back) std::this_thread::sleep_for(200ms);
    }
    CHECK(fell_back);
  }
  SECTION("without the watch, POST /reload applies new files though the configuration text is the same") {
    gateway_process gw("server:\n  watch_config: false\n" +
                       tls_config{mock.url(), section}.yaml().substr(std::string("server:\n").size()));
    check_fell_back(http_get(gw.port(), target("R4")));
    rotate(certs.client_cert, certs.client_key);
    std::this_thread::sleep_for(6s);  // longer than the check's period: nothing is checked without the watch
    check_fell_back(http_get(gw.port(), target("R5")));
    http_connection admin(gw.admin_port(), 10000ms);
    const auto r = admin.request("POST", "/reload", {});
    INFO(r.body);
    CHECK(r.status == 200);
    CHECK(nlohmann::json::parse(r.body).at("applied").get<bool>());
    check_answered(http_get(gw.port(), target("R6")), "R6");
  }
}

TEST_CASE("tls: connections are kept alive, and a new connection resumes the last session", "[tls]") {
  tls_files certs;
  tls_mock mock(certs.server_cert, certs.server_key);
  tls_config cfg{mock.url(), "ca_file: " + certs.ca_cert};
  cfg.downstream_extra = "    idle_timeout: 300ms\n";  // a pooled connection idle longer is replaced
  gateway_process gw(cfg.yaml());

  for (int i = 0; i < 20; ++i)
    check_answered(http_get(gw.port(), target("K" + std::to_string(i))), "K" + std::to_string(i));
  CHECK(mock.handshakes("tls") == 1);
  CHECK(mock.handshakes("resumed") == 0);

  std::this_thread::sleep_for(500ms);  // past idle_timeout: the next call opens a new connection
  check_answered(http_get(gw.port(), target("K20")), "K20");
  CHECK(mock.handshakes("tls") == 2);
  CHECK(mock.handshakes("resumed") == 1);
  CHECK(metric(gw, "gateway_downstream_tls_handshakes_total",
               {{"downstream", "secure"}, {"resumed", "true"}}) == 1);
  CHECK(metric(gw, "gateway_downstream_tls_handshakes_total",
               {{"downstream", "secure"}, {"resumed", "false"}}) == 1);

  // The mock resets the connection under a request: the call falls back, and the new connections that
  // follow resume the session too (a kept copy: a connection cut off does not spoil it).
  mock.mock.set_mode("coupon", "reset");
  check_fell_back(http_get(gw.port(), target("K21")));
  mock.mock.set_mode("coupon", "ok");
  check_answered(http_get(gw.port(), target("K22")), "K22");
  CHECK(mock.handshakes("tls") >= 3);
  CHECK(mock.handshakes("resumed") == mock.handshakes("tls") - 1);  // every one after the first
}

TEST_CASE("tls: a server that accepts but never answers the handshake ends the call at its deadline",
          "[tls]") {
  // A listening socket that is never accepted from: the kernel completes TCP connects, nobody speaks TLS.
  const loopback_socket listener(16);
  const auto port = listener.port();

  tls_files certs;
  tls_config cfg{"https://127.0.0.1:" + std::to_string(port), "ca_file: " + certs.ca_cert};
  cfg.deadline = "300ms";
  cfg.connect_timeout = "2s";  // the deadline ends the handshake, not the connect timeout
  gateway_process gw(cfg.yaml());

  const auto start = steady_clock::now();
  const auto res = http_get(gw.port(), target("H1"));
  const auto took = elapsed_since(start);
  check_fell_back(res);
  CHECK(res.degraded_reason("secure") == "timeout");
  CHECK(took >= 250ms);
  CHECK(took < 1500ms);  // the deadline plus a generous margin
}

TEST_CASE("tls: gateway --check rejects a missing ca_file or a device and a cert_file without key_file",
          "[tls][cli]") {
  tls_files certs;
  temp_dir dir;
  const auto check = [&](const std::string& tls, const std::string& expected) {
    const auto file = dir.write("gateway.yaml", tls_config{"https://127.0.0.1:9443", tls}.yaml());
    const auto result = run_command({GATEWAY_BIN, "--check", file}, 10s);
    INFO("stderr: " << result.err);
    CHECK(result.status.exited);
    CHECK(result.status.code == 2);
    CHECK(result.err.find(expected) != std::string::npos);
  };
  check("ca_file: " + dir.file("missing.pem"),
        "tls.ca_file: '" + dir.file("missing.pem") + "': cannot open file");
  check("cert_file: " + certs.client_cert, "tls.cert_file: cert_file and key_file go together");
  // A device is never read (it would not end).
  check("ca_file: /dev/zero", "tls.ca_file: '/dev/zero': not a regular file of at most 16 MiB");
  const auto good =
      dir.write("good.yaml", tls_config{"https://127.0.0.1:9443", "ca_file: " + certs.ca_cert +
                                                                      ", cert_file: " + certs.client_cert +
                                                                      ", key_file: " + certs.client_key}
                                 .yaml());
  const auto result = run_command({GATEWAY_BIN, "--check", good}, 10s);
  INFO("stderr: " << result.err);
  CHECK(result.status.code == 0);
}
