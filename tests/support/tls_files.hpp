#pragma once
// Certificates for TLS tests, made with the openssl command line in a temporary directory removed with
// the object: a CA; a server certificate for 127.0.0.1 and localhost and a client certificate, both
// signed by the CA; and a self-signed server certificate (same names) that the CA did not sign. EC P-256
// keys, valid two days. Throws std::runtime_error with openssl's output when a command fails.

#include "tests/support/temp_dir.hpp"

#include <string>

namespace test_support {

class tls_files {
 public:
  tls_files();

  std::string ca_cert;
  std::string server_cert;
  std::string server_key;
  std::string client_cert;
  std::string client_key;
  std::string rogue_cert;  // self-signed, not from the CA
  std::string rogue_key;

  // A file with `content` beside the certificates (e.g. a broken PEM file); returns its path.
  std::string write(const std::string& name, const std::string& content) const {
    return dir_.write(name, content);
  }

 private:
  void openssl(const std::string& args) const;

  temp_dir dir_;
};

}  // namespace test_support
