#include "gateway/server/session.hpp"

#include "gateway/core/http_text.hpp"
#include "gateway/core/peer_watch.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

#include <array>

namespace gateway {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;

void session_registry::close_all() {
  for (auto& e : entries_) {
    if (e.control) e.control->cancel(cancel_reason::shutdown);
    error_code ignored;
    e.socket->shutdown(net::ip::tcp::socket::shutdown_receive, ignored);
    e.socket->cancel(ignored);
  }
}

namespace {

std::string response_head(const outbound_response& r, bool keep_alive) {
  std::string head;
  head.reserve(192 + r.degraded.size());
  head.append("HTTP/1.1 ").append(std::to_string(r.status)).append(" ").append(reason_phrase(r.status));
  head.append("\r\nContent-Type: application/json\r\nContent-Length: ").append(std::to_string(r.body.size()));
  if (!r.request_id.empty()) head.append("\r\nX-Request-Id: ").append(r.request_id);
  if (!r.degraded.empty()) head.append("\r\nX-Degraded: ").append(r.degraded);
  if (!r.allow.empty()) head.append("\r\nAllow: ").append(r.allow);
  if (!keep_alive) head.append("\r\nConnection: close");
  head.append("\r\n\r\n");
  return head;
}

// Maps a read failure to the answer the client still deserves, or 0 when the connection just ends.
unsigned status_for_read_error(const error_code& ec) {
  if (ec == http::error::header_limit) return 431;
  if (ec == http::error::body_limit) return 413;
  if (ec.category() == make_error_code(http::error::end_of_stream).category() &&
      ec != http::error::end_of_stream && ec != http::error::partial_message) {
    return 400;
  }
  return 0;
}

struct read_outcome {
  bool ok = false;
  unsigned error_status = 0;
};

// Waits for the first byte under the idle timeout, then for the whole request under the header timeout.
read_outcome read_request(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                          http::request_parser<http::string_body>& parser, const limits_settings& limits,
                          net::yield_context yield) {
  error_code ec;
  if (buffer.size() == 0) {
    stream.expires_after(limits.idle_timeout);
    const auto n = stream.async_read_some(buffer.prepare(4096), yield[ec]);
    if (ec) return {};
    buffer.commit(n);
  }
  stream.expires_after(limits.header_timeout);
  http::async_read(stream, buffer, parser, yield[ec]);
  if (ec) return {false, status_for_read_error(ec)};
  return {true, 0};
}

std::string_view header(const http::request<http::string_body>& req, std::string_view name) {
  auto it = req.find(name);
  return it == req.end() ? std::string_view() : std::string_view(it->value().data(), it->value().size());
}

}  // namespace

void run_session(net::ip::tcp::socket socket, const session_context& ctx, net::yield_context yield) {
  error_code ec;
  socket.set_option(net::ip::tcp::no_delay(true), ec);
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer(ctx.limits->max_header_bytes + ctx.limits->max_body_bytes + 4096);
  request_control control;
  session_registry::membership listed(*ctx.registry, {&stream.socket(), &control});

  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(ctx.limits->max_header_bytes));
    parser.body_limit(ctx.limits->max_body_bytes);
    const auto read = read_request(stream, buffer, parser, *ctx.limits, yield);
    if (!read.ok) {
      if (read.error_status != 0 && control.reason() == cancel_reason::none) {
        outbound_response r;
        r.status = read.error_status;
        r.body = error_body(read.error_status == 400 ? "malformed HTTP request"
                                                     : reason_phrase(read.error_status));
        const auto head = response_head(r, false);
        stream.expires_after(ctx.limits->write_timeout);
        net::async_write(stream, std::array<net::const_buffer, 2>{net::buffer(head), net::buffer(r.body)},
                         yield[ec]);
      }
      break;
    }
    const auto& req = parser.get();
    inbound_request in;
    in.method = std::string_view(req.method_string().data(), req.method_string().size());
    in.target = std::string_view(req.target().data(), req.target().size());
    in.request_id = header(req, "X-Request-Id");
    in.traceparent = header(req, "traceparent");
    in.timeout_ms = header(req, "X-Request-Timeout-Ms");
    in.envoy_timeout_ms = header(req, "x-envoy-expected-rq-timeout-ms");

    stream.expires_never();
    peer_watch watch(stream.socket());
    watch.start([&control] { control.cancel(cancel_reason::client_gone); });
    auto response = ctx.handler->handle(in, ctx.worker, control, yield);
    watch.stop();
    if (watch.peer_closed() || control.reason() == cancel_reason::client_gone) break;

    const bool keep_alive = req.keep_alive() && control.reason() == cancel_reason::none;
    const auto head = response_head(response, keep_alive);
    stream.expires_after(ctx.limits->write_timeout);
    net::async_write(stream, std::array<net::const_buffer, 2>{net::buffer(head), net::buffer(response.body)},
                     yield[ec]);
    if (ec || !keep_alive) break;
  }
  stream.socket().shutdown(net::ip::tcp::socket::shutdown_send, ec);
  stream.close();
}

}  // namespace gateway
