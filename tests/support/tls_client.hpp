#pragma once
// TLS clients for tests of the gateway's TLS listener, on OpenSSL directly:
// - tls_probe(): one handshake with chosen versions and ALPN offer, reporting what was negotiated and
//   the server's certificate (then the connection is closed);
// - tls_relay: a plain listener on 127.0.0.1:0 whose every connection is relayed over a TLS connection of
//   its own to the gateway, so that the plain http_connection (keep-alive, pipelining, raw bytes, a close
//   or a reset) runs over TLS unchanged. A plain client's end of stream is passed on as close_notify, a
//   reset as a closed socket; the gateway closing closes the plain connection.
// Certificates are not verified unless `ca_file` is given (then the name must be 127.0.0.1).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace test_support {

struct tls_client_options {
  std::string ca_file;  // verify the chain and the address 127.0.0.1 against it
  int min_version = 0;  // TLS1_VERSION ... TLS1_3_VERSION; 0: OpenSSL's default
  int max_version = 0;
  std::vector<std::string> alpn;  // offered in this order; empty: no ALPN extension
};

struct tls_probe_result {
  bool ok = false;
  std::string error;        // OpenSSL's reason when not ok (e.g. "tlsv1 alert protocol version")
  std::string alpn;         // selected by the server; empty: none
  std::string version;      // "TLSv1.3"
  std::string common_name;  // of the server's certificate
  std::string serial;       // of the server's certificate, hex
};

tls_probe_result tls_probe(std::uint16_t port, const tls_client_options& options = {},
                           std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));

class tls_relay {
 public:
  tls_relay(std::uint16_t gateway_port, tls_client_options options = {});
  tls_relay(const tls_relay&) = delete;
  tls_relay& operator=(const tls_relay&) = delete;
  ~tls_relay();

  std::uint16_t port() const { return port_; }
  // The common name of the certificate each relayed connection got, in the order they were accepted.
  std::vector<std::string> common_names() const;
  // Relayed connections whose handshake completed.
  std::size_t handshakes() const;

 private:
  void accept_loop();
  void relay(int plain);

  std::uint16_t gateway_port_;
  tls_client_options options_;
  int listener_ = -1;
  int stop_pipe_[2] = {-1, -1};
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::vector<std::string> names_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

}  // namespace test_support
