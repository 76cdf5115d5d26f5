#pragma once
// What the configuration says of TLS: the public listener's and an https:// downstream's settings, and
// the contexts built from them at load (tls_server_context, tls_client_context).

#include "gateway/runtime/duration.hpp"

#include <chrono>
#include <memory>
#include <string>

namespace gateway {

class tls_client_context;
class tls_server_context;

// TLS on the public listener (the `server.tls` section; absent: plain TCP). `cert_file` (PEM, the chain
// allowed) and `key_file` are read at load and again whenever their content changes (checked every
// `reload_interval`); `ciphers` are TLS 1.2's (OpenSSL's list syntax), TLS 1.3 keeps OpenSSL's suites.
struct listener_tls_settings {
  bool enabled = false;
  std::string cert_file;
  std::string key_file;
  bool min_tls13 = false;  // min_version "1.3" (else "1.2")
  std::string ciphers =
      "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
      "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
  microseconds reload_interval = std::chrono::seconds(5);
  // Built at load from the files (null when not enabled); the first context the listener serves.
  std::shared_ptr<const tls_server_context> context;
};

// TLS to an https:// downstream. The peer is verified (unless `verify` is false) against `ca_file`, or
// the system's trust store when it is empty, and must be named `server_name`, or the url's host when that
// is empty (a host name is also sent as SNI; an IP address is checked against the certificate's IP
// addresses). `cert_file` and `key_file` (PEM, together) are the client certificate for mutual TLS.
// When what these files hold changes (a rotated certificate), a reload builds the downstream anew.
struct tls_settings {
  bool enabled = false;  // the url is https://
  bool verify = true;
  std::string ca_file;
  std::string server_name;
  std::string cert_file;
  std::string key_file;
  // Built at load from the fields above (files read then); shared by the downstream's connection pools.
  // Null when not enabled.
  std::shared_ptr<const tls_client_context> context;
  // What the files held when the context was built (tls_client_context::files_digest); empty: no files.
  std::string files_digest;
  // The settings and what their files held, not the context built from them (every load builds its own).
  bool operator==(const tls_settings& o) const {
    return enabled == o.enabled && verify == o.verify && ca_file == o.ca_file &&
           server_name == o.server_name && cert_file == o.cert_file && key_file == o.key_file &&
           files_digest == o.files_digest;
  }
};

}  // namespace gateway
