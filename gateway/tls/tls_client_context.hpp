#pragma once
// The client TLS context of an https downstream: OpenSSL's SSL_CTX (through Asio's ssl::context) with
// TLS 1.2 as the lowest version, the trust anchors (a CA file, or the system's store), peer verification
// on or off, and the client certificate and key for mutual TLS. Built once at config load, where a file
// that is missing or does not load is a config error; then shared, read-only, by the downstream's
// connection pools on every I/O thread (OpenSSL makes connections from one SSL_CTX on any thread).
// Include the Asio SSL headers only where a connection is made (gateway/downstream/tls_stream.hpp).

#include "gateway/tls/tls_settings.hpp"

#include <memory>
#include <string>

typedef struct ssl_st SSL;

namespace boost::asio::ssl {
class context;
}

namespace gateway {

class tls_client_context {
 public:
  // A problem found while building: the settings key it belongs to ("ca_file", ...) and the message.
  struct problem {
    std::string key;
    std::string message;
  };

  // Builds the context of a downstream whose url's host is `host`; null with `why` set when a file is
  // missing, unreadable or not what it should be (a certificate, a key matching the certificate).
  static std::shared_ptr<const tls_client_context> make(const tls_settings& settings, const std::string& host,
                                                        problem& why);
  // A SHA-256 digest of what `settings`' ca_file, cert_file and key_file hold now (a missing or
  // unreadable file counts as such); empty when it names none.
  static std::string files_digest(const tls_settings& settings);

  tls_client_context(const tls_client_context&) = delete;
  tls_client_context& operator=(const tls_client_context&) = delete;
  ~tls_client_context();

  // Asio's context, from which each connection's stream is made (SSL_new only reads it).
  boost::asio::ssl::context& native() const { return *context_; }

  // Prepares a new connection: SNI (a host name only, never an IP address) and, when verifying, the name
  // or IP address the peer's certificate must hold. False when OpenSSL refuses (out of memory).
  bool prepare(SSL* ssl) const;
  // Whether the peer's certificate is verified (a failed handshake may then be a rejected certificate).
  bool verifies() const { return verify_; }

 private:
  tls_client_context();

  std::unique_ptr<boost::asio::ssl::context> context_;
  std::string peer_name_;  // server_name, or the url's host
  bool peer_is_ip_ = false;
  bool verify_ = true;
};

}  // namespace gateway
