#include "tests/support/tls_client.hpp"

#include "tests/support/loopback_socket.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <stdexcept>

namespace test_support {

namespace {

using steady = std::chrono::steady_clock;

int poll_left(steady::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// A non-blocking socket connected to 127.0.0.1:port; -1 when the connect fails.
int connect_loopback(std::uint16_t port, steady::time_point deadline) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return -1;
  }
  pollfd p{fd, POLLOUT, 0};
  int err = 0;
  socklen_t length = sizeof err;
  if (::poll(&p, 1, poll_left(deadline)) <= 0 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &length) != 0 ||
      err != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

struct ssl_deleter {
  void operator()(SSL* s) const { SSL_free(s); }
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
using ssl_ptr = std::unique_ptr<SSL, ssl_deleter>;
using ctx_ptr = std::unique_ptr<SSL_CTX, ssl_deleter>;

ctx_ptr make_context(const tls_client_options& o) {
  ctx_ptr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) throw std::runtime_error("SSL_CTX_new failed");
  // The relay reads whatever records come: a ticket alone must not block a read waiting for data.
  SSL_CTX_clear_mode(ctx.get(), SSL_MODE_AUTO_RETRY);
  // Old versions are offered only when asked for; OpenSSL's default security level refuses them.
  if (o.min_version != 0 && o.min_version < TLS1_2_VERSION) SSL_CTX_set_security_level(ctx.get(), 0);
  if (o.min_version != 0) SSL_CTX_set_min_proto_version(ctx.get(), o.min_version);
  if (o.max_version != 0) SSL_CTX_set_max_proto_version(ctx.get(), o.max_version);
  if (!o.alpn.empty()) {
    std::string wire;
    for (const auto& p : o.alpn) wire += static_cast<char>(p.size()) + p;
    SSL_CTX_set_alpn_protos(ctx.get(), reinterpret_cast<const unsigned char*>(wire.data()),
                            static_cast<unsigned>(wire.size()));
  }
  if (!o.ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx.get(), o.ca_file.c_str(), nullptr) != 1)
      throw std::runtime_error("cannot load " + o.ca_file);
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_CTX_get0_param(ctx.get()), "127.0.0.1");
  }
  return ctx;
}

std::string last_error() {
  const auto code = ERR_get_error();
  if (code == 0) return "connection closed";
  const char* reason = ERR_reason_error_string(code);
  return reason != nullptr ? reason : "error " + std::to_string(code);
}

// Runs the handshake on the non-blocking `fd` until it succeeds, fails or `deadline` passes.
bool handshake(SSL* ssl, int fd, steady::time_point deadline, std::string& error) {
  for (;;) {
    ERR_clear_error();
    const int r = SSL_connect(ssl);
    if (r == 1) return true;
    const int e = SSL_get_error(ssl, r);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
      error = last_error();
      return false;
    }
    pollfd p{fd, static_cast<short>(e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
    if (::poll(&p, 1, poll_left(deadline)) <= 0) {
      error = "handshake timed out";
      return false;
    }
  }
}

std::string common_name_of(SSL* ssl, std::string* serial = nullptr) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return {};
  char name[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, name, sizeof name);
  if (serial != nullptr) {
    BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr);
    char* hex = BN_bn2hex(bn);
    *serial = hex;
    OPENSSL_free(hex);
    BN_free(bn);
  }
  X509_free(cert);
  return name;
}

bool send_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const auto n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n > 0) {
      data += n;
      size -= static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 1000);
    } else {
      return false;
    }
  }
  return true;
}

bool ssl_write_all(SSL* ssl, int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const int n = SSL_write(ssl, data, static_cast<int>(size));
    if (n > 0) {
      data += n;
      size -= static_cast<std::size_t>(n);
      continue;
    }
    const int e = SSL_get_error(ssl, n);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) return false;
    pollfd p{fd, static_cast<short>(e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
    ::poll(&p, 1, 1000);
  }
  return true;
}

}  // namespace

tls_probe_result tls_probe(std::uint16_t port, const tls_client_options& options,
                           std::chrono::milliseconds timeout) {
  tls_probe_result result;
  const auto deadline = steady::now() + timeout;
  auto ctx = make_context(options);
  const int fd = connect_loopback(port, deadline);
  if (fd < 0) {
    result.error = "connect failed";
    return result;
  }
  ssl_ptr ssl(SSL_new(ctx.get()));
  SSL_set_fd(ssl.get(), fd);
  result.ok = handshake(ssl.get(), fd, deadline, result.error);
  if (result.ok) {
    const unsigned char* alpn = nullptr;
    unsigned int length = 0;
    SSL_get0_alpn_selected(ssl.get(), &alpn, &length);
    result.alpn.assign(reinterpret_cast<const char*>(alpn), length);
    result.version = SSL_get_version(ssl.get());
    result.common_name = common_name_of(ssl.get(), &result.serial);
    SSL_shutdown(ssl.get());
  }
  ::close(fd);
  return result;
}

tls_relay::tls_relay(std::uint16_t gateway_port, tls_client_options options)
    : gateway_port_(gateway_port), options_(std::move(options)) {
  loopback_socket listener(64);
  if (::pipe2(stop_pipe_, O_CLOEXEC) != 0) throw std::runtime_error("tls_relay: no pipe");
  port_ = listener.port();
  listener_ = listener.release();
  acceptor_ = std::thread([this] { accept_loop(); });
}

tls_relay::~tls_relay() {
  stopping_ = true;
  [[maybe_unused]] const auto written = ::write(stop_pipe_[1], "x", 1);
  acceptor_.join();
  for (auto& t : threads_) t.join();
  ::close(listener_);
  ::close(stop_pipe_[0]);
  ::close(stop_pipe_[1]);
}

std::vector<std::string> tls_relay::common_names() const {
  std::lock_guard lock(mutex_);
  return names_;
}

std::size_t tls_relay::handshakes() const {
  std::lock_guard lock(mutex_);
  return names_.size();
}

void tls_relay::accept_loop() {
  while (!stopping_) {
    pollfd p[2] = {{listener_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (::poll(p, 2, -1) <= 0 || (p[1].revents & POLLIN) != 0) continue;
    const int plain = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (plain < 0) continue;
    // One at a time: common_names() is in accept order.
    std::lock_guard lock(mutex_);
    threads_.emplace_back([this, plain] { relay(plain); });
  }
}

void tls_relay::relay(int plain) {
  auto ctx = make_context(options_);
  const int fd = connect_loopback(gateway_port_, steady::now() + std::chrono::seconds(5));
  ssl_ptr ssl(fd >= 0 ? SSL_new(ctx.get()) : nullptr);
  std::string error;
  if (!ssl || (SSL_set_fd(ssl.get(), fd),
               !handshake(ssl.get(), fd, steady::now() + std::chrono::seconds(5), error))) {
    if (fd >= 0) ::close(fd);
    ::close(plain);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    names_.push_back(common_name_of(ssl.get()));
  }
  bool plain_open = true;  // the plain client has not ended its stream
  char buffer[16384];
  while (!stopping_) {
    pollfd p[3] = {
        {plain, static_cast<short>(plain_open ? POLLIN : 0), 0}, {fd, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (SSL_pending(ssl.get()) == 0 && ::poll(p, 3, -1) <= 0) continue;
    if ((p[2].revents & POLLIN) != 0) break;
    if (plain_open && (p[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const auto n = ::recv(plain, buffer, sizeof buffer, MSG_DONTWAIT);
      if (n > 0) {
        if (!ssl_write_all(ssl.get(), fd, buffer, static_cast<std::size_t>(n))) break;
      } else if (n == 0) {
        SSL_shutdown(ssl.get());  // the client's end of stream: close_notify
        plain_open = false;
      } else if (errno != EAGAIN && errno != EINTR) {
        break;  // reset: the TLS connection is closed without a word
      }
    }
    bool tls_closed = false;
    for (;;) {
      const int n = SSL_read(ssl.get(), buffer, sizeof buffer);
      if (n > 0) {
        if (!send_all(plain, buffer, static_cast<std::size_t>(n))) tls_closed = true;
        continue;
      }
      const int e = SSL_get_error(ssl.get(), n);
      tls_closed = tls_closed || (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE);
      break;
    }
    if (tls_closed) break;
  }
  ::close(fd);
  ::close(plain);
}

}  // namespace test_support
