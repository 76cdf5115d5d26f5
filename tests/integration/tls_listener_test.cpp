// TLS on the public listener (server.tls), against the real gateway and mock: requests relayed over TLS
// behave as on plain TCP (keep-alive, bodies, HEAD, pipelining, limits, a client going away), ALPN and
// the protocol versions, the certificate replaced on disk the way a Kubernetes Secret mount does it
// (a good pair taken up by new connections while an old one goes on, a bad pair refused), a handshake
// that never comes, and the files checked at load. Certificates are made per test (openssl program).

#include "tests/integration/metric_scrape.hpp"
#include "tests/support/offer_checks.hpp"
#include "tests/support/tls_client.hpp"
#include "tests/support/tls_files.hpp"

#include <openssl/ssl.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

using namespace test_support;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// cert_file and key_file as a Kubernetes Secret volume shows them: tls.crt -> ..data/tls.crt, with
// ..data a symlink to the current version's directory, swapped in one rename.
class secret_volume {
 public:
  secret_volume(const std::string& cert, const std::string& key) {
    swap(cert, key);
    fs::create_symlink("..data/tls.crt", dir_.file("tls.crt"));
    fs::create_symlink("..data/tls.key", dir_.file("tls.key"));
  }
  std::string cert() const { return dir_.file("tls.crt"); }
  std::string key() const { return dir_.file("tls.key"); }

  void swap(const std::string& cert, const std::string& key) {
    const auto version = "..version_" + std::to_string(++versions_);
    fs::create_directory(dir_.file(version));
    fs::copy_file(cert, dir_.file(version + "/tls.crt"));
    fs::copy_file(key, dir_.file(version + "/tls.key"));
    fs::create_directory_symlink(version, dir_.file("..data_tmp"));
    fs::rename(dir_.file("..data_tmp"), dir_.file("..data"));
  }

 private:
  temp_dir dir_;
  int versions_ = 0;
};

// A gateway on TLS with two routes: GET /api/tls?sku= (one call, coupon) and POST /api/cart/{user}
// (the client's body passed on).
std::string tls_config(const mock_downstream& mock, const std::string& cert, const std::string& key,
                       const std::string& tls_extra = "", const std::string& limits = "") {
  std::string y = "server:\n  listen: 127.0.0.1:0\n  threads: 2\n  tls:\n    cert_file: " + cert +
                  "\n    key_file: " + key + "\n" + tls_extra;
  y += "limits:\n  max_body_bytes: 1KiB\n  max_header_bytes: 2KiB\n" + limits;
  y += "downstreams:\n  mock:\n    url: " + mock.url() + "\n";
  y += R"(routes:
  - path: /api/tls
    params:
      sku: {required: true}
    calls:
      - {name: coupon, downstream: mock, path: '/coupon?sku={sku}', fallback: {priceCent: -1, stock: 0}}
  - path: /api/cart/{user}
    method: POST
    response: object
    calls:
      - {name: cart, downstream: mock, method: POST, path: '/cart?user={user}', body: client}
)";
  return y;
}

void check_answer(const http_response& r, const std::string& sku) {
  INFO("status " << r.status << ", body " << r.body);
  REQUIRE(r.status == 200);
  const auto body = r.json();
  REQUIRE(body.is_array());
  REQUIRE(body.size() == 1);
  check_healthy_entry(body[0], "coupon", sku);
}

tls_client_options verified_by(const std::string& ca_file) {
  tls_client_options o;
  o.ca_file = ca_file;
  return o;
}

tls_client_options offering(std::vector<std::string> alpn, int max_version = 0) {
  tls_client_options o;
  o.alpn = std::move(alpn);
  o.max_version = max_version;
  return o;
}

tls_client_options only(int version) {
  tls_client_options o;
  o.min_version = version;
  o.max_version = version;
  return o;
}

// Polls `done` every 50 ms until it holds or `timeout` passes.
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout = 10s) {
  const auto until = steady_clock::now() + timeout;
  while (!done()) {
    if (steady_clock::now() > until) return false;
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

}  // namespace

TEST_CASE("tls listener: requests over TLS are answered as over plain TCP", "[tls][listener]") {
  tls_files certs;
  mock_downstream mock;
  gateway_process gw(tls_config(mock, certs.server_cert, certs.server_key));
  tls_relay relay(gw.port(), verified_by(certs.ca_cert));  // the chain and 127.0.0.1 verified

  // Keep-alive: three requests, one TLS connection.
  http_connection client(relay.port());
  for (const std::string sku : {"T1", "T2", "T3"}) check_answer(client.get("/api/tls?sku=" + sku), sku);
  CHECK(relay.handshakes() == 1);
  CHECK(relay.common_names() == std::vector<std::string>{"server"});

  // A route that takes the client's body, with and without 100-continue.
  const std::string body = R"({"sku":"A1","qty":2})";
  auto r = client.request("POST", "/api/cart/bob", {{"Content-Type", "application/json"}}, body);
  CHECK(r.status == 200);
  CHECK(mock.path_counter(mock.stats(), "cart", "requests") == 1);
  r = client.request("POST", "/api/cart/ann", {{"Expect", "100-continue"}}, body);
  CHECK(r.status == 200);

  // HEAD: the head alone, with the length a GET gets (then closed, as asked).
  {
    http_connection c(relay.port());
    c.send_raw("HEAD /api/tls?sku=H1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    std::string received;
    CHECK(c.wait_closed_by_peer(5000ms, &received));
    CHECK(received.starts_with("HTTP/1.1 200 "));
    CHECK(received.find("\r\nContent-Length: ") != std::string::npos);
    CHECK(received.ends_with("\r\n\r\n"));
  }

  // Two pipelined requests in one write, answered in order.
  client.send_raw(
      "GET /api/tls?sku=P1 HTTP/1.1\r\nHost: x\r\n\r\nGET /api/tls?sku=P2 HTTP/1.1\r\nHost: x\r\n\r\n");
  check_answer(client.read_response(), "P1");
  check_answer(client.read_response(), "P2");
  CHECK(relay.handshakes() == 2);  // `client`'s and the HEAD's

  // Limits: a body over max_body_bytes is 413, a head over max_header_bytes 431; each closes.
  {
    http_connection c(relay.port());
    r = c.request("POST", "/api/cart/bob", {}, std::string(2048, 'x'));
    CHECK(r.status == 413);
    CHECK(c.wait_closed_by_peer(5000ms));
  }
  {
    http_connection c(relay.port());
    r = c.get("/api/tls?sku=L1", {{"X-Big", std::string(3000, 'b')}});
    CHECK(r.status == 431);
    CHECK(c.wait_closed_by_peer(5000ms));
  }

  // A client that goes away while its request runs: the request's calls are cancelled.
  mock.set_mode("coupon", "hang");
  const auto calls = mock.path_counter(mock.stats(), "coupon", "requests");
  {
    http_connection c(relay.port());
    c.send_request("GET", "/api/tls?sku=G1");
    REQUIRE(eventually([&] { return mock.path_counter(mock.stats(), "coupon", "requests") > calls; }));
  }  // closed: the relay sends close_notify
  CHECK(eventually([&] { return metric(gw, "gateway_client_disconnects_total") == 1; }));
  CHECK(eventually([&] { return mock.path_counter(mock.stats(), "coupon", "cancelled") == 1; }));
  CHECK(settled_metric(gw, "http_server_request_duration_seconds_count",
                       {{"http_response_status_code", "499"}}, 1) == 1);
  CHECK(metric(gw, "gateway_tls_handshake_failures_total") == 0);
}

TEST_CASE("tls listener: pass-through routes stream bodies over TLS", "[tls][listener][proxy]") {
  tls_files certs;
  mock_downstream mock({"--record-headers", "x-forwarded-proto"});
  auto config = tls_config(mock, certs.server_cert, certs.server_key);
  config += "  - path_prefix: /raw/\n    proxy: {downstream: mock, rewrite: /}\n";
  gateway_process gw(config);
  tls_relay relay(gw.port(), verified_by(certs.ca_cert));
  http_connection client(relay.port(), 10000ms);
  // A download larger than the buffer, then an upload in chunks, on one TLS connection.
  auto r = client.request("GET", "/raw/__bytes?n=3000000", {}, {}, 20000ms);
  REQUIRE(r.status == 200);
  CHECK(r.body.size() == 3000000);
  const std::string piece(100000, 'u');
  client.send_raw("PUT /raw/__sink HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  for (int i = 0; i < 20; ++i) client.send_raw("186a0\r\n" + piece + "\r\n");
  client.send_raw("0\r\n\r\n");
  r = client.read_response(20000ms);
  REQUIRE(r.status == 200);
  CHECK(r.json()["received"] == 2000000);
  // The downstream learns the client came over TLS.
  CHECK(http_connection(relay.port()).get("/raw/coupon?sku=1").status == 200);
  CHECK(mock.stats()["paths"]["coupon"]["last_headers"]["x-forwarded-proto"] == "https");
}

TEST_CASE("tls listener: ALPN selects http/1.1, TLS 1.0 and 1.1 are refused, min_version 1.3",
          "[tls][listener]") {
  tls_files certs;
  mock_downstream mock;
  {
    gateway_process gw(tls_config(mock, certs.server_cert, certs.server_key));
    auto p = tls_probe(gw.port(), offering({"h2", "http/1.1"}));
    INFO(p.error);
    CHECK(p.ok);
    CHECK(p.alpn == "http/1.1");
    CHECK(p.version == "TLSv1.3");
    p = tls_probe(gw.port());  // no ALPN at all: served
    CHECK(p.ok);
    CHECK(p.alpn.empty());
    p = tls_probe(gw.port(), offering({"http/1.1"}, TLS1_2_VERSION));
    CHECK(p.ok);
    CHECK(p.version == "TLSv1.2");
    CHECK(p.alpn == "http/1.1");

    p = tls_probe(gw.port(), offering({"h2"}));  // no protocol in common (RFC 7301)
    CHECK_FALSE(p.ok);
    CHECK(p.error.find("no application protocol") != std::string::npos);
    p = tls_probe(gw.port(), only(TLS1_1_VERSION));
    CHECK_FALSE(p.ok);
    CHECK(p.error.find("protocol version") != std::string::npos);
    p = tls_probe(gw.port(), only(TLS1_VERSION));
    CHECK_FALSE(p.ok);
    CHECK(eventually([&] {
      return metric(gw, "gateway_tls_handshake_failures_total", {{"reason", "protocol"}}) == 3;
    }));
    CHECK(gw.running());
    check_answer(http_connection(tls_relay(gw.port()).port()).get("/api/tls?sku=V1"), "V1");
  }
  {
    gateway_process gw(tls_config(mock, certs.server_cert, certs.server_key, "    min_version: \"1.3\"\n"));
    CHECK_FALSE(tls_probe(gw.port(), offering({}, TLS1_2_VERSION)).ok);
    CHECK(tls_probe(gw.port()).ok);
  }
}

TEST_CASE("tls listener: a replaced certificate serves new connections, open ones go on", "[tls][listener]") {
  tls_files certs;
  mock_downstream mock;
  secret_volume secret(certs.server_cert, certs.server_key);
  gateway_process gw(tls_config(mock, secret.cert(), secret.key(), "    reload_interval: 200ms\n"));
  const auto before = tls_probe(gw.port());
  REQUIRE(before.ok);
  CHECK(before.common_name == "server");
  const auto expiry = metric(gw, "gateway_tls_certificate_expiry_timestamp_seconds");
  CHECK(expiry > static_cast<double>(std::chrono::duration_cast<std::chrono::seconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count()));

  tls_relay relay(gw.port());
  http_connection old(relay.port());
  check_answer(old.get("/api/tls?sku=R1"), "R1");

  secret.swap(certs.rogue_cert, certs.rogue_key);  // another name and serial
  REQUIRE(eventually([&] { return tls_probe(gw.port()).common_name == "rogue"; }));
  CHECK(tls_probe(gw.port()).serial != before.serial);
  CHECK(metric(gw, "gateway_tls_certificate_reloads_total", {{"result", "success"}}) == 1);
  CHECK(metric(gw, "gateway_tls_certificate_reloads_total", {{"result", "failure"}}) == 0);

  // The connection made before goes on with its certificate; a new one gets the new certificate.
  check_answer(old.get("/api/tls?sku=R2"), "R2");
  http_connection fresh(relay.port());
  check_answer(fresh.get("/api/tls?sku=R3"), "R3");
  CHECK(relay.common_names() == std::vector<std::string>{"server", "rogue"});
  check_answer(old.get("/api/tls?sku=R4"), "R4");
}

TEST_CASE("tls listener: a replacement whose key does not match is refused, the old certificate stays",
          "[tls][listener]") {
  tls_files certs;
  mock_downstream mock;
  secret_volume secret(certs.server_cert, certs.server_key);
  gateway_process gw(tls_config(mock, secret.cert(), secret.key(), "    reload_interval: 200ms\n"));
  const auto before = tls_probe(gw.port());
  REQUIRE(before.ok);

  secret.swap(certs.server_cert, certs.rogue_key);
  REQUIRE(eventually([&] {
    return metric(gw, "gateway_tls_certificate_reloads_total", {{"result", "failure"}}) == 1;
  }));
  CHECK(gw.process().stderr_text().find("does not match cert_file") != std::string::npos);
  const auto after = tls_probe(gw.port());
  REQUIRE(after.ok);
  CHECK(after.common_name == "server");
  CHECK(after.serial == before.serial);
  check_answer(http_connection(tls_relay(gw.port()).port()).get("/api/tls?sku=B1"), "B1");
  // The same bad pair is reported once, not at every check.
  std::this_thread::sleep_for(600ms);
  CHECK(metric(gw, "gateway_tls_certificate_reloads_total", {{"result", "failure"}}) == 1);
  CHECK(metric(gw, "gateway_tls_certificate_reloads_total", {{"result", "success"}}) == 0);

  // Fixed: taken up.
  secret.swap(certs.rogue_cert, certs.rogue_key);
  CHECK(eventually([&] { return tls_probe(gw.port()).common_name == "rogue"; }));
  CHECK(metric(gw, "gateway_tls_certificate_reloads_total", {{"result", "success"}}) == 1);
}

TEST_CASE("tls listener: a client that never finishes its handshake is closed after header_timeout",
          "[tls][listener]") {
  tls_files certs;
  mock_downstream mock;
  gateway_process gw(tls_config(mock, certs.server_cert, certs.server_key, "", "  header_timeout: 500ms\n"));
  {
    http_connection silent(gw.port());  // TCP only: no ClientHello
    const auto start = steady_clock::now();
    CHECK(silent.wait_closed_by_peer(5000ms));
    const auto took = elapsed_since(start);
    CHECK(took >= 400ms);
    CHECK(took < 4000ms);
  }
  {
    http_connection half(gw.port());  // the start of a ClientHello, then nothing
    half.send_raw(std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11));
    CHECK(half.wait_closed_by_peer(5000ms));
  }
  {
    http_connection plain(gw.port());  // plain HTTP to the TLS port: refused at once
    plain.send_raw("GET /api/tls?sku=X HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(plain.wait_closed_by_peer(2000ms));
  }
  CHECK(eventually([&] {
    return metric(gw, "gateway_tls_handshake_failures_total", {{"reason", "timeout"}}) == 2 &&
           metric(gw, "gateway_tls_handshake_failures_total", {{"reason", "protocol"}}) == 1;
  }));
  // A failure is counted before its connection's coroutine has ended: the gauge follows a little later.
  CHECK(eventually([&] { return metric(gw, "gateway_open_connections") == 0; }));
  CHECK(gw.running());
  check_answer(http_connection(tls_relay(gw.port()).port()).get("/api/tls?sku=S1"), "S1");
}

TEST_CASE("tls listener: --check and the loader refuse missing files and a key that does not match",
          "[tls][listener][cli]") {
  tls_files certs;
  mock_downstream mock;
  temp_dir dir;
  const auto check = [&](const std::string& cert, const std::string& key, const std::string& extra = "") {
    const auto file = dir.write("gateway.yaml", tls_config(mock, cert, key, extra));
    return run_command({GATEWAY_BIN, "--check", file}, 10s);
  };
  auto result = check(dir.file("missing.crt"), certs.server_key);
  INFO(result.err);
  CHECK(result.status.code == 2);
  CHECK(result.err.find("server.tls.cert_file: '" + dir.file("missing.crt") + "': cannot open file") !=
        std::string::npos);
  result = check(certs.server_cert, certs.rogue_key);
  CHECK(result.status.code == 2);
  CHECK(result.err.find("server.tls.key_file: '" + certs.rogue_key + "' does not match cert_file '" +
                        certs.server_cert + "'") != std::string::npos);
  result = check(certs.server_cert, certs.server_key, "    ciphers: NOT-A-CIPHER\n");
  CHECK(result.status.code == 2);
  CHECK(result.err.find("server.tls.ciphers:") != std::string::npos);
  result = check(certs.server_cert, certs.server_key, "    min_version: \"1.1\"\n");
  CHECK(result.status.code == 2);
  CHECK(result.err.find("server.tls.min_version: min_version must be '1.2' or '1.3'") != std::string::npos);
  result = check(certs.server_cert, certs.server_key);
  CHECK(result.status.code == 0);

  // The gateway itself refuses to start on a bad pair; /config shows the paths, never the key.
  const auto bad = dir.write("bad.yaml", tls_config(mock, certs.server_cert, certs.rogue_key));
  CHECK(run_command({GATEWAY_BIN, "--config", bad}, 10s).status.code == 2);
  gateway_process gw(tls_config(mock, certs.server_cert, certs.server_key));
  const auto config = http_get(gw.admin_port(), "/config").json();
  CHECK(config["server"]["tls"]["cert_file"] == certs.server_cert);
  CHECK(config["server"]["tls"]["key_file"] == certs.server_key);
  CHECK(config["server"]["tls"]["min_version"] == "1.2");
  CHECK(config["server"]["tls"]["reload_interval"] == "5s");
  CHECK(http_get(gw.admin_port(), "/config").body.find("PRIVATE KEY") == std::string::npos);
}
