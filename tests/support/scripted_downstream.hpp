#pragma once
// A downstream whose answers a test writes byte for byte, for what mock-downstream will not do (bytes
// after an answer, answers split across writes): a listener on 127.0.0.1:0, plain or TLS (OpenSSL,
// blocking), with a thread per connection that reads each request (its head, and a body with a
// Content-Length) and writes the pieces `script` returns for it, each by a write of its own (over TLS, a
// record of its own), after the piece's pause. Every request is recorded with the number of the
// connection it came on (0, 1, ... in accept order), and counted once all its pieces are written (so a
// test can wait until bytes sent behind an answer have left). The destructor closes every connection and
// joins. SIGPIPE is ignored in the process (a write to a connection the gateway closed fails instead).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

typedef struct ssl_ctx_st SSL_CTX;

namespace test_support {

class scripted_downstream {
 public:
  struct request {
    std::size_t connection = 0;
    std::string method;
    std::string target;
    std::string head;  // the whole head as received, up to and with its empty line
  };
  struct piece {
    std::string bytes;
    std::chrono::milliseconds pause{0};  // before this write
  };
  using script = std::function<std::vector<piece>(const request&)>;

  // TLS when `cert_file` is given (with its `key_file`): the server's certificate, PEM.
  explicit scripted_downstream(script answer, const std::string& cert_file = "",
                               const std::string& key_file = "");
  scripted_downstream(const scripted_downstream&) = delete;
  scripted_downstream& operator=(const scripted_downstream&) = delete;
  ~scripted_downstream();

  std::uint16_t port() const { return port_; }
  std::string url() const;
  // The requests read so far, in the order they were read.
  std::vector<request> requests() const;
  // Waits until the pieces of `n` answers have been written (true), or `timeout` has passed (false).
  bool wait_answered(std::size_t n,
                     std::chrono::milliseconds timeout = std::chrono::milliseconds(3000)) const;

 private:
  void accept_loop();
  void serve(int fd, std::size_t number);

  script answer_;
  SSL_CTX* tls_ = nullptr;  // owned; null: plain TCP
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::thread acceptor_;
  mutable std::mutex mutex_;
  std::vector<int> connections_;  // open descriptors, closed by the destructor
  std::vector<std::thread> servers_;
  std::vector<request> requests_;
  std::size_t answered_ = 0;  // answers written whole
};

}  // namespace test_support
