#include "gateway/tls/tls_server_context.hpp"

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <boost/asio/ssl/context.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace gateway {

namespace net = boost::asio;
namespace ssl = net::ssl;
using boost::system::error_code;

namespace {

// A certificate chain or a key is a few KiB; anything much larger is not one.
constexpr std::size_t max_file_bytes = 1024 * 1024;

bool read_file(const std::string& path, const std::string& key, std::string& out,
               tls_server_context::problem& why) {
  const auto failed = [&](const char* what, int err) {
    why = {key, "'" + path + "': " + what + ": " + std::strerror(err)};
    return false;
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return failed("cannot open file", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd);
    return failed("cannot read file", err);
  }
  out.clear();
  char buffer[16 * 1024];
  for (;;) {
    const auto n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return failed("cannot read file", err);
    }
    if (n == 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
    if (out.size() > max_file_bytes) {
      ::close(fd);
      why = {key, "'" + path + "': larger than 1 MiB: not a PEM certificate or key"};
      return false;
    }
  }
  ::close(fd);
  return true;
}

// ALPN (RFC 7301): http/1.1 when the client offers it. A client that offers only other protocols (h2
// alone) is refused with the no_application_protocol alert rather than served a protocol it did not ask
// for; a client that sends no ALPN at all is not asked about it.
int select_alpn(SSL*, const unsigned char** out, unsigned char* out_length, const unsigned char* offered,
                unsigned int offered_length, void*) {
  static constexpr unsigned char ours[] = "\x08http/1.1";
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, out_length, ours, sizeof ours - 1, offered, offered_length) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

// An encrypted key is refused, never asked about: OpenSSL's default would prompt on the terminal.
int no_password(char*, int, int, void*) {
  return 0;
}

std::int64_t seconds_of(const ASN1_TIME* time) {
  std::tm tm{};
  if (time == nullptr || ASN1_TIME_to_tm(time, &tm) != 1) return 0;
  return static_cast<std::int64_t>(::timegm(&tm));
}

}  // namespace

tls_server_context::tls_server_context()
    : context_(std::make_unique<ssl::context>(ssl::context::tls_server)) {}

tls_server_context::~tls_server_context() = default;

bool tls_server_context::read_files(const listener_tls_settings& settings, pem_files& out, problem& why) {
  return read_file(settings.cert_file, "cert_file", out.cert, why) &&
         read_file(settings.key_file, "key_file", out.key, why);
}

tls_server_context::digest tls_server_context::digest_of(const pem_files& files) {
  digest d{};
  const std::uint64_t cert_size = files.cert.size();  // so that no two splits of the bytes are one pair
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  unsigned int length = 0;
  if (md != nullptr && EVP_DigestInit_ex(md, EVP_sha256(), nullptr) == 1 &&
      EVP_DigestUpdate(md, &cert_size, sizeof cert_size) == 1 &&
      EVP_DigestUpdate(md, files.cert.data(), files.cert.size()) == 1 &&
      EVP_DigestUpdate(md, files.key.data(), files.key.size()) == 1) {
    EVP_DigestFinal_ex(md, d.data(), &length);
  }
  EVP_MD_CTX_free(md);
  return d;
}

std::shared_ptr<const tls_server_context> tls_server_context::make(const listener_tls_settings& settings,
                                                                   const pem_files& files, problem& why) {
  std::shared_ptr<tls_server_context> made(new tls_server_context());
  auto& ctx = *made->context_;
  SSL_CTX* native = ctx.native_handle();
  SSL_CTX_set_min_proto_version(native, settings.min_tls13 ? TLS1_3_VERSION : TLS1_2_VERSION);
  // No renegotiation: a client could otherwise make the server redo the expensive half of a handshake at
  // will, in the middle of a connection.
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_compression | SSL_OP_NO_RENEGOTIATION |
                  SSL_OP_CIPHER_SERVER_PREFERENCE);
  // An idle keep-alive connection gives its record buffers back.
  SSL_CTX_set_mode(native, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_default_passwd_cb(native, &no_password);
  if (SSL_CTX_set_cipher_list(native, settings.ciphers.c_str()) != 1) {
    why = {"ciphers", "no cipher of '" + settings.ciphers + "' is known to OpenSSL"};
    return nullptr;
  }
  // The key first: the certificate then drops a key that does not match it, and the check below names the
  // mismatch (the other order fails the key with OpenSSL's less telling "key values mismatch").
  error_code ec;
  if (ctx.use_private_key(net::buffer(files.key), ssl::context::pem, ec); ec) {
    why = {"key_file", "'" + settings.key_file + "' holds no usable PEM private key (" + ec.message() + ")"};
    return nullptr;
  }
  if (ctx.use_certificate_chain(net::buffer(files.cert), ec); ec) {
    why = {"cert_file",
           "'" + settings.cert_file + "' holds no usable PEM certificate (" + ec.message() + ")"};
    return nullptr;
  }
  if (SSL_CTX_check_private_key(native) != 1) {
    why = {"key_file", "'" + settings.key_file + "' does not match cert_file '" + settings.cert_file + "'"};
    return nullptr;
  }
  SSL_CTX_set_alpn_select_cb(native, &select_alpn, nullptr);
  // Sessions are resumed (the server's cache, and tickets); an id context keeps that working should client
  // certificates ever be asked for.
  static constexpr unsigned char id_context[] = "gateway";
  SSL_CTX_set_session_id_context(native, id_context, sizeof id_context - 1);
  made->not_after_ = seconds_of(X509_get0_notAfter(SSL_CTX_get0_certificate(native)));
  made->digest_ = digest_of(files);
  return made;
}

std::shared_ptr<const tls_server_context> tls_server_context::load(const listener_tls_settings& settings,
                                                                   problem& why) {
  pem_files files;
  if (!read_files(settings, files, why)) return nullptr;
  return make(settings, files, why);
}

}  // namespace gateway
