#include "gateway/tls/tls_client_context.hpp"

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <boost/asio/ssl/context.hpp>

#include <arpa/inet.h>
#include <sys/stat.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

namespace gateway {

namespace ssl = boost::asio::ssl;
using boost::system::error_code;

namespace {

// The most a certificate, key or CA file may hold (a CA bundle is a few hundred KiB).
constexpr std::uintmax_t max_file_bytes = 16 << 20;

// A file named in the settings must be a readable regular file within max_file_bytes before OpenSSL is
// asked what it holds, so that the message says which of the two went wrong (and a device such as
// /dev/zero is never read).
bool readable(const std::string& path, const std::string& key, tls_client_context::problem& why) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    why = {key, "'" + path + "': cannot open file: " + std::strerror(errno)};
    return false;
  }
  if (!S_ISREG(st.st_mode) || static_cast<std::uintmax_t>(st.st_size) > max_file_bytes) {
    why = {key, "'" + path + "': not a regular file of at most 16 MiB"};
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (in) return true;
  why = {key, "'" + path + "': cannot open file: " + std::strerror(errno)};
  return false;
}

bool is_ip_address(const std::string& name) {
  unsigned char address[16];
  return ::inet_pton(AF_INET, name.c_str(), address) == 1 ||
         ::inet_pton(AF_INET6, name.c_str(), address) == 1;
}

}  // namespace

std::string tls_client_context::files_digest(const tls_settings& settings) {
  if (settings.ca_file.empty() && settings.cert_file.empty() && settings.key_file.empty()) return {};
  const std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> md(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!md || EVP_DigestInit_ex(md.get(), EVP_sha256(), nullptr) != 1) return "-";
  std::array<char, 64 * 1024> piece;
  for (const auto* path : {&settings.ca_file, &settings.cert_file, &settings.key_file}) {
    std::ifstream in(*path, std::ios::binary);
    std::uintmax_t total = 0;
    // At most max_file_bytes (and a little) of each: a file that grows past it is refused at load anyway.
    while (in && total <= max_file_bytes) {
      const auto n = in.read(piece.data(), piece.size()).gcount();
      if (n <= 0) break;
      EVP_DigestUpdate(md.get(), piece.data(), static_cast<std::size_t>(n));
      total += static_cast<std::uintmax_t>(n);
    }
    const auto end = std::to_string(total) + (in.is_open() ? ";" : "-;");  // where each file ends
    EVP_DigestUpdate(md.get(), end.data(), end.size());
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(md.get(), digest, &size) != 1) return "-";
  return std::string(reinterpret_cast<const char*>(digest), size);
}

tls_client_context::tls_client_context()
    : context_(std::make_unique<ssl::context>(ssl::context::tls_client)) {}

tls_client_context::~tls_client_context() = default;

std::shared_ptr<const tls_client_context> tls_client_context::make(const tls_settings& settings,
                                                                   const std::string& host, problem& why) {
  std::shared_ptr<tls_client_context> made(new tls_client_context());
  auto& ctx = *made->context_;
  SSL_CTX* native = ctx.native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_compression);
  // An idle pooled connection gives its read and write buffers back.
  SSL_CTX_set_mode(native, SSL_MODE_RELEASE_BUFFERS);
  error_code ec;
  if (!settings.ca_file.empty()) {
    if (!readable(settings.ca_file, "ca_file", why)) return nullptr;
    if (ctx.load_verify_file(settings.ca_file, ec); ec) {
      why = {"ca_file", "'" + settings.ca_file + "' holds no usable PEM certificate (" + ec.message() + ")"};
      return nullptr;
    }
  } else if (settings.verify && (ctx.set_default_verify_paths(ec), ec)) {
    why = {"verify", "the system's trust store cannot be loaded (" + ec.message() + ")"};
    return nullptr;
  }
  if (!settings.cert_file.empty()) {
    if (!readable(settings.cert_file, "cert_file", why) || !readable(settings.key_file, "key_file", why))
      return nullptr;
    if (ctx.use_certificate_chain_file(settings.cert_file, ec); ec) {
      why = {"cert_file",
             "'" + settings.cert_file + "' holds no usable PEM certificate (" + ec.message() + ")"};
      return nullptr;
    }
    if (ctx.use_private_key_file(settings.key_file, ssl::context::pem, ec); ec) {
      why = {"key_file",
             "'" + settings.key_file + "' holds no usable PEM private key (" + ec.message() + ")"};
      return nullptr;
    }
    if (SSL_CTX_check_private_key(native) != 1) {
      why = {"key_file", "'" + settings.key_file + "' does not match cert_file '" + settings.cert_file + "'"};
      return nullptr;
    }
  }
  ctx.set_verify_mode(settings.verify ? ssl::verify_peer : ssl::verify_none);
  made->verify_ = settings.verify;
  made->peer_name_ = settings.server_name.empty() ? host : settings.server_name;
  made->peer_is_ip_ = is_ip_address(made->peer_name_);
  return made;
}

bool tls_client_context::prepare(SSL* ssl) const {
  // RFC 6066 3: SNI carries host names only.
  if (!peer_is_ip_ && SSL_set_tlsext_host_name(ssl, peer_name_.c_str()) != 1) return false;
  if (!verify_) return true;
  if (peer_is_ip_) return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), peer_name_.c_str()) == 1;
  SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  return SSL_set1_host(ssl, peer_name_.c_str()) == 1;
}

}  // namespace gateway
