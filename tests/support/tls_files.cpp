#include "tests/support/tls_files.hpp"

#include "tests/support/child_process.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace test_support {

namespace {

// Extensions per kind of certificate; with a file of its own, no system openssl.cnf is read.
constexpr const char* openssl_config = R"([req]
distinguished_name = dn
prompt = no
[dn]
CN = test
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
[client]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
)";

constexpr const char* new_key = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";

// The openssl program on PATH (the child is spawned by path).
std::string openssl_program() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const auto candidate = (dir.empty() ? "." : dir) + "/openssl";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  throw std::runtime_error("the openssl program is not on PATH (Debian package openssl)");
}

}  // namespace

tls_files::tls_files() {
  const auto cnf = dir_.write("openssl.cnf", openssl_config);
  const auto f = [&](const char* name) { return dir_.file(name); };
  ca_cert = f("ca.crt");
  server_cert = f("server.crt");
  server_key = f("server.key");
  client_cert = f("client.crt");
  client_key = f("client.key");
  rogue_cert = f("rogue.crt");
  rogue_key = f("rogue.key");
  const std::string config = " -config " + cnf;
  openssl("req -x509" + config + " -extensions ca" + new_key + " -keyout " + f("ca.key") + " -out " +
          ca_cert + " -days 2 -subj /CN=gateway-test-ca");
  for (const auto& [name, ext] : {std::pair{"server", "server"}, std::pair{"client", "client"}}) {
    const std::string base = dir_.file(name);
    openssl("req -new" + config + new_key + " -keyout " + base + ".key -out " + base +
            ".csr -subj /CN=" + name);
    openssl("x509 -req -in " + base + ".csr -CA " + ca_cert + " -CAkey " + f("ca.key") +
            " -CAcreateserial -days 2 -out " + base + ".crt -extfile " + cnf + " -extensions " + ext);
  }
  openssl("req -x509" + config + " -extensions server" + new_key + " -keyout " + rogue_key + " -out " +
          rogue_cert + " -days 2 -subj /CN=rogue");
}

void tls_files::openssl(const std::string& args) const {
  std::vector<std::string> argv{openssl_program()};
  std::istringstream words(args);
  for (std::string w; words >> w;) argv.push_back(w);
  const auto result = run_command(argv, std::chrono::seconds(20));
  if (!result.status.exited || result.status.code != 0)
    throw std::runtime_error("openssl " + args + " failed:\n" + result.out + result.err);
}

}  // namespace test_support
