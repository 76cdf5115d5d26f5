// The tls section of an https downstream and server.tls: defaults, what /config shows, and the errors found
// at load (files that cannot be read or are not PEM, cert_file without key_file, a tls section on http://).
// Loading builds the TLS context; the files here need no openssl program (valid certificates are
// covered by tests/integration/tls_test.cpp).

#include "gateway/config/config_json.hpp"
#include "gateway/config/config_loader.hpp"
#include "gateway/downstream/request_head.hpp"
#include "gateway/tls/tls_client_context.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace gateway;

namespace {

// A config with one downstream at `url`, followed by `extra` lines inside it.
std::string config_with(const std::string& url, const std::string& extra = "") {
  return "downstreams:\n  secure:\n    url: " + url + "\n" + extra +
         "routes:\n  - path: /a\n    calls:\n      - name: secure\n        downstream: secure\n"
         "        path: /x\n        fallback: {}\n";
}

// The single error of `text`.
config_error only_error(const std::string& text) {
  const auto r = load_config_text(text, "t.yaml");
  CHECK_FALSE(r.config.has_value());
  REQUIRE(r.errors.size() == 1);
  return r.errors[0];
}

}  // namespace

TEST_CASE("tls config: an https url defaults to port 443 and verifies against the system store",
          "[config][tls]") {
  const auto r = load_config_text(config_with("https://api.example.com/v1"), "t.yaml");
  REQUIRE(r.errors.empty());
  const auto& d = r.config->downstreams.at(0);
  CHECK(d.host == "api.example.com");
  CHECK(d.port == 443);
  CHECK(d.base_path == "/v1");
  CHECK(d.tls.enabled);
  CHECK(d.tls.verify);
  REQUIRE(d.tls.context);
  CHECK(d.tls.context->verifies());
  // The default port is left out of Host, as for http on 80.
  request_head head(d);
  call_request request;
  request.target = "/x";
  std::string bytes(head.size(request), '\0');
  head.write(request, bytes.data());
  CHECK(bytes.find("\r\nHost: api.example.com\r\n") != std::string::npos);

  const auto json = effective_config_json(*r.config);
  CHECK(json["downstreams"]["secure"]["tls"] ==
        nlohmann::json{
            {"verify", true}, {"ca_file", ""}, {"server_name", ""}, {"cert_file", ""}, {"key_file", ""}});

  const auto plain = load_config_text(config_with("http://127.0.0.1:9001"), "t.yaml");
  REQUIRE(plain.errors.empty());
  CHECK_FALSE(plain.config->downstreams.at(0).tls.enabled);
  CHECK_FALSE(plain.config->downstreams.at(0).tls.context);
  CHECK_FALSE(effective_config_json(*plain.config)["downstreams"]["secure"].contains("tls"));
}

TEST_CASE("tls config: verify false, server_name and a port are taken as written", "[config][tls]") {
  const auto r = load_config_text(
      config_with("https://10.0.0.7:8443", "    tls: {verify: false, server_name: api.internal}\n"),
      "t.yaml");
  REQUIRE(r.errors.empty());
  const auto& d = r.config->downstreams.at(0);
  CHECK(d.port == 8443);
  CHECK_FALSE(d.tls.verify);
  CHECK(d.tls.server_name == "api.internal");
  REQUIRE(d.tls.context);
  CHECK_FALSE(d.tls.context->verifies());
}

TEST_CASE("tls config: files that cannot be read or hold no PEM are errors at their key", "[config][tls]") {
  test_support::temp_dir dir;
  const auto missing = dir.file("missing.pem");
  {
    const auto e = only_error(config_with("https://127.0.0.1:9443", "    tls: {ca_file: " + missing + "}\n"));
    CHECK(e.message ==
          "downstream 'secure'.tls.ca_file: '" + missing + "': cannot open file: No such file or directory");
    CHECK(e.line == 4);
  }
  const auto junk = dir.write("junk.pem", "not a certificate\n");
  {
    const auto e =
        only_error(config_with("https://127.0.0.1:9443", "    tls:\n      ca_file: " + junk + "\n"));
    CHECK(e.message.find("downstream 'secure'.tls.ca_file: '" + junk + "' holds no usable PEM certificate") ==
          0);
    CHECK(e.line == 5);
  }
  {
    const auto e =
        only_error(config_with("https://127.0.0.1:9443", "    tls: {verify: false, cert_file: " + junk +
                                                             ", key_file: " + junk + "}\n"));
    CHECK(e.message.find("downstream 'secure'.tls.cert_file: '" + junk +
                         "' holds no usable PEM certificate") == 0);
  }
  {
    const auto e = only_error(config_with("https://127.0.0.1:9443",
                                          "    tls: {cert_file: " + junk + ", key_file: " + missing + "}\n"));
    CHECK(e.message ==
          "downstream 'secure'.tls.key_file: '" + missing + "': cannot open file: No such file or directory");
  }
}

TEST_CASE("tls config: cert_file and key_file go together, tls needs https, unknown keys fail",
          "[config][tls]") {
  CHECK(only_error(config_with("https://h", "    tls: {cert_file: /c.pem}\n")).message ==
        "downstream 'secure'.tls.cert_file: cert_file and key_file go together");
  CHECK(only_error(config_with("https://h", "    tls: {key_file: /k.pem}\n")).message ==
        "downstream 'secure'.tls.key_file: cert_file and key_file go together");
  CHECK(only_error(config_with("http://h", "    tls: {verify: false}\n")).message ==
        "downstream 'secure'.tls: a tls section needs an https:// url");
  CHECK(only_error(config_with("https://h", "    tls: {verfy: false}\n")).message.find("verfy") !=
        std::string::npos);
  CHECK(only_error(config_with("https://h", "    tls: {server_name: 'a b'}\n")).message ==
        "downstream 'secure'.tls.server_name: server_name must be a host name or an IP address");
  // An https url that does not parse is reported once, not again by its tls section.
  CHECK(only_error(config_with("https://h:0", "    tls: {verify: false}\n")).message.find(".url:") !=
        std::string::npos);
  CHECK(only_error(config_with("ftp://h")).message ==
        "downstream 'secure'.url: url must start with http:// or https://");
}

TEST_CASE(
    "tls config: server.tls needs both files, a known min_version and a reload_interval of 100ms or more",
    "[config][tls]") {
  const auto server = [](const std::string& tls) {
    return "server:\n  tls: " + tls + "\n" + config_with("http://h");
  };
  CHECK(only_error(server("{key_file: /k.pem}")).message == "server.tls: missing required key 'cert_file'");
  CHECK(only_error(server("{cert_file: /c.pem}")).message == "server.tls: missing required key 'key_file'");
  CHECK(only_error(server("{cert_file: /c.pem, key_file: /k.pem, min_version: '1.0'}")).message ==
        "server.tls.min_version: min_version must be '1.2' or '1.3'");
  CHECK(only_error(server("{cert_file: /c.pem, key_file: /k.pem, reload_interval: 10ms}")).message ==
        "server.tls.reload_interval: reload_interval must be at least 100ms");
  CHECK(only_error(server("{cert_file: /c.pem, key_file: /k.pem, sni: true}")).message.find("sni") !=
        std::string::npos);
  // The files are read only once the section is otherwise sound.
  test_support::temp_dir dir;
  const auto missing = dir.file("missing.pem");
  CHECK(only_error(server("{cert_file: " + missing + ", key_file: /k.pem}")).message ==
        "server.tls.cert_file: '" + missing + "': cannot open file: No such file or directory");
  const auto junk = dir.write("junk.pem", "not a certificate\n");
  CHECK(only_error(server("{cert_file: " + junk + ", key_file: " + junk + "}"))
            .message.find("server.tls.key_file: '" + junk + "' holds no usable PEM private key") == 0);
  // Absent: a plain listener.
  const auto r = load_config_text(config_with("http://h"), "t.yaml");
  REQUIRE(r.config);
  CHECK_FALSE(r.config->server.tls.enabled);
  CHECK_FALSE(effective_config_json(*r.config)["server"].contains("tls"));
}
