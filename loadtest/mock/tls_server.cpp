#include "loadtest/mock/tls_server.hpp"

#include "loadtest/mock/session.hpp"

#include <openssl/ssl.h>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

namespace mock {

namespace net = boost::asio;
namespace ssl = net::ssl;

namespace {

constexpr auto handshake_timeout = std::chrono::seconds(10);

void check(const boost::system::error_code& ec, const std::string& what) {
  if (ec) throw std::runtime_error(what + ": " + ec.message());
}

}  // namespace

tls_server::tls_server(const tls_options& options)
    : context_(std::make_unique<ssl::context>(ssl::context::tls_server)) {
  SSL_CTX* native = context_->native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  boost::system::error_code ec;
  context_->use_certificate_chain_file(options.cert_file, ec);
  check(ec, "--tls-cert '" + options.cert_file + "'");
  context_->use_private_key_file(options.key_file, ssl::context::pem, ec);
  check(ec, "--tls-key '" + options.key_file + "'");
  if (!options.client_ca_file.empty()) {
    context_->load_verify_file(options.client_ca_file, ec);
    check(ec, "--tls-client-ca '" + options.client_ca_file + "'");
    context_->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  }
  // Without a session id context OpenSSL refuses to resume sessions once client certificates are asked for.
  static constexpr unsigned char id_context[] = "mock-downstream";
  SSL_CTX_set_session_id_context(native, id_context, sizeof id_context - 1);
}

tls_server::~tls_server() = default;

void tls_server::serve(net::ip::tcp::socket socket, path_registry& registry, std::size_t endpoint,
                       const net::yield_context& yield) {
  ssl::stream<net::ip::tcp::socket> stream(std::move(socket), *context_);
  // The timer's handler may run after the handshake (its expiry already queued): it closes the socket
  // only while `handshaking` points at the stream.
  auto handshaking = std::make_shared<ssl::stream<net::ip::tcp::socket>*>(&stream);
  net::steady_timer limit(stream.get_executor());
  limit.expires_after(handshake_timeout);
  limit.async_wait([handshaking](const boost::system::error_code& ec) {
    if (ec || *handshaking == nullptr) return;
    boost::system::error_code ignored;
    (*handshaking)->next_layer().close(ignored);
  });
  boost::system::error_code ec;
  stream.async_handshake(ssl::stream_base::server, yield[ec]);
  *handshaking = nullptr;
  limit.cancel();
  if (ec) return;
  registry.count_tls_handshake(SSL_session_reused(stream.native_handle()) == 1);
  run_session(std::move(stream), registry, endpoint, yield);
}

}  // namespace mock
