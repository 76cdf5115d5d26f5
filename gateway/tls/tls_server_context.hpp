#pragma once
// The server TLS context of the public listener: OpenSSL's SSL_CTX (through Asio's ssl::context) with
// TLS 1.2 (or 1.3) as the lowest version, the configured TLS 1.2 ciphers, ALPN that selects http/1.1
// (a client that offers ALPN without it is refused with no_application_protocol, RFC 7301 3.2), session
// resumption (OpenSSL's session cache and tickets) and no renegotiation. Built from the PEM contents of
// cert_file and key_file, checked completely first (a certificate chain, a private key, the key matching
// the certificate); a problem is a value, never an exception. Once built it is read-only and shared by
// every I/O thread (OpenSSL makes connections from one SSL_CTX on any thread); each connection keeps the
// context it was made from for as long as it lives, so replacing it never touches open connections.
// Include the Asio SSL headers only where a connection is made (gateway/server/tls_client_io.cpp).

#include "gateway/tls/tls_settings.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <string>

namespace boost::asio::ssl {
class context;
}

namespace gateway {

class tls_server_context {
 public:
  // A problem found while reading or building: the settings key it belongs to and the message.
  struct problem {
    std::string key;
    std::string message;
  };
  // The two files' contents, as read together.
  struct pem_files {
    std::string cert;
    std::string key;
  };
  using digest = std::array<unsigned char, 32>;  // SHA-256

  // Reads cert_file and key_file; false with `why` set when one cannot be read.
  static bool read_files(const listener_tls_settings& settings, pem_files& out, problem& why);
  // What identifies a pair of contents: a context is built again only when it changes.
  static digest digest_of(const pem_files& files);

  // Builds from contents read from the settings' files (named in messages); null with `why` set when the
  // certificate, the key, their match or the ciphers are not usable.
  static std::shared_ptr<const tls_server_context> make(const listener_tls_settings& settings,
                                                        const pem_files& files, problem& why);
  // read_files() then make().
  static std::shared_ptr<const tls_server_context> load(const listener_tls_settings& settings, problem& why);

  tls_server_context(const tls_server_context&) = delete;
  tls_server_context& operator=(const tls_server_context&) = delete;
  ~tls_server_context();

  // Asio's context, from which each connection's stream is made (SSL_new only reads it).
  boost::asio::ssl::context& native() const { return *context_; }
  // The certificate's notAfter, in seconds since the Unix epoch.
  std::int64_t not_after() const { return not_after_; }
  // Of the contents it was built from.
  const digest& files_digest() const { return digest_; }

 private:
  tls_server_context();

  std::unique_ptr<boost::asio::ssl::context> context_;
  std::int64_t not_after_ = 0;
  digest digest_{};
};

}  // namespace gateway
