#include "tests/support/scripted_downstream.hpp"

#include <openssl/ssl.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <stdexcept>

namespace test_support {

namespace {

// The value of the Content-Length field of `head`, 0 without one.
std::size_t content_length(const std::string& head) {
  std::string lower(head);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto at = lower.find("\r\ncontent-length:");
  if (at == std::string::npos) return 0;
  return static_cast<std::size_t>(std::stoull(head.substr(at + 17)));
}

// One connection's bytes, over TLS when `ssl` is set.
struct channel {
  int fd;
  SSL* ssl;

  long receive(char* out, std::size_t size) {
    if (ssl != nullptr) return SSL_read(ssl, out, static_cast<int>(size));
    return static_cast<long>(::recv(fd, out, size, 0));
  }
  bool send_all(const std::string& bytes) {
    if (ssl != nullptr)
      return bytes.empty() || SSL_write(ssl, bytes.data(), static_cast<int>(bytes.size())) > 0;
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      const auto n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }
};

}  // namespace

scripted_downstream::scripted_downstream(script answer, const std::string& cert_file,
                                         const std::string& key_file)
    : answer_(std::move(answer)) {
  std::signal(SIGPIPE, SIG_IGN);  // OpenSSL writes without MSG_NOSIGNAL
  if (!cert_file.empty()) {
    tls_ = SSL_CTX_new(TLS_server_method());
    if (tls_ == nullptr || SSL_CTX_use_certificate_chain_file(tls_, cert_file.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(tls_, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      SSL_CTX_free(tls_);
      throw std::runtime_error("scripted_downstream: cannot load " + cert_file);
    }
  }
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&a), len) != 0 ||
      ::listen(listener_, 16) != 0 || ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    SSL_CTX_free(tls_);
    if (listener_ >= 0) ::close(listener_);
    throw std::runtime_error("scripted_downstream: cannot listen on 127.0.0.1");
  }
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

scripted_downstream::~scripted_downstream() {
  ::shutdown(listener_, SHUT_RDWR);
  acceptor_.join();
  ::close(listener_);
  {
    std::lock_guard lock(mutex_);
    for (const int fd : connections_) ::shutdown(fd, SHUT_RDWR);
  }
  for (auto& t : servers_) t.join();  // the acceptor, which adds to them, has ended
  for (const int fd : connections_) ::close(fd);
  SSL_CTX_free(tls_);
}

std::string scripted_downstream::url() const {
  return (tls_ != nullptr ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port_);
}

std::vector<scripted_downstream::request> scripted_downstream::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

bool scripted_downstream::wait_answered(std::size_t n, std::chrono::milliseconds timeout) const {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (answered_ >= n) return true;
    }
    if (std::chrono::steady_clock::now() >= give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void scripted_downstream::accept_loop() {
  for (std::size_t number = 0;; ++number) {
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard lock(mutex_);
    connections_.push_back(fd);
    servers_.emplace_back([this, fd, number] { serve(fd, number); });
  }
}

void scripted_downstream::serve(int fd, std::size_t number) {
  SSL* ssl = nullptr;
  if (tls_ != nullptr) {
    ssl = SSL_new(tls_);
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) != 1) {
      SSL_free(ssl);
      return;
    }
  }
  channel io{fd, ssl};
  std::string in;
  char buf[4096];
  for (;;) {
    auto end = in.find("\r\n\r\n");
    while (end == std::string::npos) {
      const auto n = io.receive(buf, sizeof buf);
      if (n <= 0) break;
      in.append(buf, static_cast<std::size_t>(n));
      end = in.find("\r\n\r\n");
    }
    if (end == std::string::npos) break;
    const std::string head = in.substr(0, end + 4);
    const auto body = content_length(head);
    while (in.size() < head.size() + body) {
      const auto n = io.receive(buf, sizeof buf);
      if (n <= 0) break;
      in.append(buf, static_cast<std::size_t>(n));
    }
    if (in.size() < head.size() + body) break;
    in.erase(0, head.size() + body);
    request r;
    r.connection = number;
    const auto space = head.find(' ');
    const auto second = head.find(' ', space + 1);
    r.method = head.substr(0, space);
    r.target = head.substr(space + 1, second - space - 1);
    r.head = head;
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(r);
    }
    bool ok = true;
    for (const auto& p : answer_(r)) {
      if (p.pause.count() > 0) std::this_thread::sleep_for(p.pause);
      if (!(ok = io.send_all(p.bytes))) break;
    }
    if (!ok) break;
    std::lock_guard lock(mutex_);
    ++answered_;
  }
  SSL_free(ssl);
}

}  // namespace test_support
