// http_attempt's path for https downstreams: the handshake on a new connection, then the exchange through
// the connection's TLS stream (see http_attempt.hpp). Asio's SSL operations do the reading and writing;
// the answer goes into the same parser as on a plain connection (consume_input).

#include "gateway/downstream/http_attempt.hpp"
#include "gateway/downstream/tls_stream.hpp"
#include "gateway/tls/tls_client_context.hpp"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>

#include <algorithm>

namespace gateway {

namespace net = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;

namespace {

// A TLS connection's input is read through its stream, never on a readiness report. A pooled one is
// still watched while it idles (anything arriving then makes it stale); the report of that watch that
// comes once it is in use again goes here and is dropped.
struct input_read_elsewhere final : read_readiness::listener {
  void on_readable(const error_code&) override {}
};
input_read_elsewhere read_elsewhere;

// What a TLS error reported by OpenSSL (often the server's alert) says, for the call's detail (a static
// text): `otherwise` for an error without a text of its own; null when `ec` is not a TLS error.
const char* tls_error(const error_code& ec, const char* otherwise) {
  if (ec.category() != net::error::get_ssl_category()) return nullptr;
  switch (ERR_GET_REASON(static_cast<unsigned long>(static_cast<unsigned>(ec.value())))) {
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
      return "TLS client certificate required";
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
      return "TLS client certificate refused";
    default:
      return otherwise;
  }
}

// Why a handshake failed, for the call's detail: the server's certificate when it was verified and
// failed, else what OpenSSL reported.
const char* handshake_failure(SSL* ssl, bool verifying, const error_code& ec) {
  if (verifying) {
    switch (SSL_get_verify_result(ssl)) {
      case X509_V_OK:
        break;
      case X509_V_ERR_HOSTNAME_MISMATCH:
      case X509_V_ERR_IP_ADDRESS_MISMATCH:
        return "TLS certificate name mismatch";
      case X509_V_ERR_CERT_HAS_EXPIRED:
      case X509_V_ERR_CERT_NOT_YET_VALID:
        return "TLS certificate expired or not yet valid";
      default:
        return "TLS certificate not trusted";
    }
  }
  const char* what = tls_error(ec, "TLS handshake failed");
  return what != nullptr ? what : "TLS handshake failed";
}

}  // namespace

// A new connection is connected: the handshake offers the pool's last session for resumption.
void http_attempt::handshake() {
  enter(state::handshaking);
  const auto& context = *pool_.tls();
  conn_->tls = std::make_unique<tls_stream>(conn_->socket, context.native());
  SSL* ssl = conn_->tls->stream.native_handle();
  if (!context.prepare(ssl)) return exchange_failed(net::error::no_memory, "TLS setup failed");
  if (SSL_SESSION* session = pool_.tls_session()) SSL_set_session(ssl, session);
  conn_->tls->stream.async_handshake(net::ssl::stream_base::client,
                                     [this](const error_code& ec) { handshaken(ec); });
}

void http_attempt::handshaken(error_code ec) {
  if (timer_) timer_->cancel();
  if (state_ == state::connect_timed_out) {
    ec = net::error::timed_out;
  } else if (!ec && cancel_.cancelled()) {
    ec = net::error::operation_aborted;
  }
  SSL* ssl = conn_->tls->stream.native_handle();
  if (ec) {
    const bool refused = ec != net::error::timed_out && ec != net::error::operation_aborted;
    return exchange_failed(ec,
                           refused ? handshake_failure(ssl, pool_.tls()->verifies(), ec) : "connect failed");
  }
  pool_.count_handshake(SSL_session_reused(ssl) == 1);
  write();
}

void http_attempt::tls_write() {
  conn_->user = &read_elsewhere;
  net::async_write(conn_->tls->stream, net::buffer(head_.data(), head_.size()),
                   [this](const error_code& ec, std::size_t) { written(ec); });
}

void http_attempt::tls_read() {
  auto& buffer = conn_->buffer;
  const auto room = std::clamp<std::size_t>(buffer.capacity() - buffer.size(), 512, 16384);
  conn_->tls->stream.async_read_some(
      buffer.prepare(room), [this](const error_code& ec, std::size_t bytes) { tls_readable(ec, bytes); });
}

void http_attempt::tls_readable(const error_code& ec, std::size_t bytes) {
  if (ec == net::error::eof) return end_of_stream();  // the downstream's close_notify
  if (ec == net::ssl::error::stream_truncated) {
    // Closed without close_notify: before any of the answer, the way an idle connection goes stale; an
    // answer cut off so is never taken for complete (its end may have been forged).
    return read_failed(parser_->got_some() ? ec : error_code(http::error::end_of_stream));
  }
  if (ec) {
    // TLS 1.3: a server that refuses the client's certificate says so after the client's handshake
    // ended, in answer to the request.
    if (const char* what = tls_error(ec, "TLS error")) return exchange_failed(ec, what);
    return read_failed(ec);
  }
  conn_->buffer.commit(bytes);
  SSL* ssl = conn_->tls->stream.native_handle();
  // TLS 1.3 tickets come after the handshake, ahead of the answer: the first exchange on a connection
  // has them by now (the pool keeps a copy of the session at each of its reads).
  if (!conn_->reused) pool_.keep_tls_session(ssl);
  const bool drained = SSL_has_pending(ssl) != 1 && BIO_ctrl_pending(SSL_get_rbio(ssl)) == 0;
  if (consume_input(conn_->buffer, drained)) tls_read();
}

}  // namespace gateway
