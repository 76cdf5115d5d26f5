#pragma once
// The mock's TLS options: listeners that serve HTTPS (each one more endpoint of the same service, after
// the plain --listen ones), the server's certificate and key, and a CA that client certificates must be
// signed by (mutual TLS: a client without one is refused at the handshake). Pure parsing.

#include <string>
#include <string_view>
#include <vector>

namespace mock {

struct listen_address;

struct tls_options {
  std::vector<listen_address> listen;  // --tls-listen, in order
  std::string cert_file;               // --tls-cert: PEM chain
  std::string key_file;                // --tls-key: PEM key
  std::string client_ca_file;          // --tls-client-ca: empty: no client certificate asked for
};

// Applies one --tls-* option (`arg`, e.g. "--tls-cert") with its value; false with `why` for a bad value.
bool apply_tls_option(std::string_view arg, std::string_view value, tls_options& tls, std::string& why);

// The options as a whole: listeners need a certificate and a key; returns the problem or "".
std::string tls_options_problem(const tls_options& tls);

}  // namespace mock
