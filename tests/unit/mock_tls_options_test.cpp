// The mock's TLS options: HTTPS listeners after the plain ones, which need a certificate and a key.

#include "loadtest/mock/options.hpp"

#include <catch2/catch.hpp>

using namespace mock;

TEST_CASE("mock options: --tls-listen adds HTTPS listeners with their certificate, key and client CA",
          "[mock][tls]") {
  std::string error;
  const auto options = parse_command_line(
      {"--listen", "127.0.0.1:0", "--tls-listen", "127.0.0.1:0", "--tls-listen=localhost:9443", "--tls-cert",
       "c.pem", "--tls-key=k.pem", "--tls-client-ca", "ca.pem"},
      error);
  INFO(error);
  REQUIRE(options);
  CHECK(options->listen.size() == 1);
  REQUIRE(options->tls.listen.size() == 2);
  CHECK(options->tls.listen[1] == listen_address{"127.0.0.1", 9443});
  CHECK(options->tls.cert_file == "c.pem");
  CHECK(options->tls.key_file == "k.pem");
  CHECK(options->tls.client_ca_file == "ca.pem");
  CHECK(parse_command_line({}, error)->tls.listen.empty());
}

TEST_CASE("mock options: TLS listeners need a certificate and a key, and TLS files need a listener",
          "[mock][tls]") {
  std::string error;
  CHECK_FALSE(parse_command_line({"--tls-listen", "127.0.0.1:0", "--tls-cert", "c.pem"}, error));
  CHECK(error == "--tls-listen needs --tls-cert and --tls-key");
  CHECK_FALSE(parse_command_line({"--tls-cert", "c.pem", "--tls-key", "k.pem"}, error));
  CHECK(error == "--tls-cert, --tls-key and --tls-client-ca need --tls-listen");
  CHECK_FALSE(parse_command_line({"--tls-listen", "nowhere"}, error));
  CHECK(error == "bad value for --tls-listen: 'nowhere'");
  CHECK_FALSE(parse_command_line({"--tls-cert="}, error));
  CHECK(error == "bad value for --tls-cert: ''");
}
