#include "gateway/observe/otlp_http_sender.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/url/parse.hpp>

#include <stdexcept>

namespace gateway {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {
constexpr std::size_t response_body_limit = 64 * 1024;  // an ExportTraceServiceResponse is a few bytes
}

struct otlp_http_sender::impl {
  net::io_context io{1};
  std::atomic<bool> aborted{false};
  beast::tcp_stream stream{io};
  bool connected = false;
  beast::flat_buffer buffer;
  tcp::resolver::results_type endpoints;  // empty until resolved; cleared after a failed connect
  std::string host;                       // for the resolver: no brackets around an IPv6 address
  std::string port;
  std::string host_field;  // the Host header: as in the endpoint
  std::string target;

  // Runs one asynchronous operation on this thread to completion; the stream's expiry bounds it.
  template <class Start>
  boost::system::error_code run(Start start) {
    boost::system::error_code result;
    start([&result](boost::system::error_code ec, auto&&...) { result = ec; });
    io.restart();
    io.run();
    return result;
  }

  void close() {
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream.close();
    connected = false;
    buffer.clear();
  }

  std::string connect(clock::time_point deadline) {
    if (endpoints.empty()) {
      tcp::resolver resolver(io);
      boost::system::error_code ec;
      endpoints = resolver.resolve(host, port, ec);
      if (ec) return "resolve " + host + ": " + ec.message();
    }
    stream.expires_at(deadline);
    const auto ec = run([&](auto handler) { stream.async_connect(endpoints, std::move(handler)); });
    if (ec) {
      endpoints = {};
      stream.close();
      return "connect: " + ec.message();
    }
    connected = true;
    return {};
  }

  // One exchange on the open connection, closed after a failure. `answered`: some of a response arrived
  // (then nothing is sent again).
  std::string exchange(http::request<http::string_body>& req, clock::time_point deadline, bool& answered) {
    stream.expires_at(deadline);
    if (auto ec = run([&](auto handler) { http::async_write(stream, req, std::move(handler)); })) {
      close();
      return "write: " + ec.message();
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(response_body_limit);
    const auto ec = run([&](auto handler) { http::async_read(stream, buffer, parser, std::move(handler)); });
    answered = parser.got_some();
    if (ec) {
      close();
      return "read: " + ec.message();
    }
    const auto& res = parser.get();
    if (!res.keep_alive() || buffer.size() != 0) close();
    const unsigned status = res.result_int();
    if (status < 200 || status > 299) return "HTTP " + std::to_string(status);
    return {};
  }
};

otlp_http_sender::otlp_http_sender(std::string_view endpoint) : impl_(std::make_unique<impl>()) {
  const auto parsed = boost::urls::parse_absolute_uri(endpoint);
  if (!parsed) throw std::invalid_argument("not an absolute URL: " + std::string(endpoint));
  const auto& u = *parsed;
  if (u.scheme() != "http") {
    throw std::invalid_argument("only http:// endpoints are supported: " + std::string(endpoint));
  }
  if (u.host_address().empty()) throw std::invalid_argument("no host in " + std::string(endpoint));
  if (u.has_userinfo() || u.has_fragment()) {
    throw std::invalid_argument("no userinfo or fragment allowed in " + std::string(endpoint));
  }
  impl_->host = u.host_address();
  impl_->port = u.has_port() ? std::string(u.port()) : "80";
  impl_->host_field = u.encoded_host();
  if (u.has_port()) impl_->host_field += ":" + impl_->port;
  impl_->target = u.encoded_resource();
  if (impl_->target.empty()) impl_->target = "/";
}

otlp_http_sender::~otlp_http_sender() = default;

std::string otlp_http_sender::post(std::string body, clock::time_point deadline) {
  auto& m = *impl_;
  http::request<http::string_body> req(http::verb::post, m.target, 11);
  req.set(http::field::host, m.host_field);
  req.set(http::field::user_agent, "gateway/" GATEWAY_VERSION);
  req.set(http::field::content_type, "application/x-protobuf");
  req.body() = std::move(body);
  req.prepare_payload();
  for (;;) {
    if (m.aborted.load(std::memory_order_acquire)) return "aborted";
    if (clock::now() >= deadline) return "deadline passed";
    const bool reused = m.connected;
    if (!reused) {
      if (auto error = m.connect(deadline); !error.empty()) return error;
    }
    bool answered = false;
    auto error = m.exchange(req, deadline, answered);
    if (error.empty()) return error;
    // A kept connection the collector had closed while idle: once more, on a new connection.
    if (!reused || answered) return error;
  }
}

void otlp_http_sender::abort() {
  impl_->aborted.store(true, std::memory_order_release);
  // Runs on the thread inside post() (the io_context's only runner), in the operation it waits for, or
  // never if none comes (post() then sees `aborted` first).
  net::post(impl_->io, [m = impl_.get()] {
    if (m->connected || m->stream.socket().is_open()) m->close();
  });
}

}  // namespace gateway
