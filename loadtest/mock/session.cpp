#include "loadtest/mock/session.hpp"

#include "loadtest/mock/encoded_replies.hpp"
#include "loadtest/mock/handle_request.hpp"
#include "loadtest/mock/idle_watchdog.hpp"
#include "loadtest/mock/peer_watch.hpp"
#include "loadtest/mock/replies.hpp"

#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/range/iterator_range.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace mock {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using namespace std::chrono_literals;

constexpr std::size_t header_limit = 16 * 1024;
constexpr std::size_t body_limit = 64 * 1024;
// A read or write that makes no progress for this long ends the connection.
constexpr auto idle_timeout = 60s;
constexpr auto hang_limit = 5min;
constexpr auto drip_interval = 1s;

// A read error that means the client sent something that is not HTTP (as opposed to the connection
// ending or timing out).
bool is_malformed(const beast::error_code& ec) {
  if (ec == http::error::end_of_stream || ec == http::error::partial_message) return false;
  return &ec.category() == &http::make_error_code(http::error::bad_version).category();
}

std::string_view field(const http::request<http::string_body>& req, std::string_view name) {
  const auto it = req.find(name);
  if (it == req.end()) return {};
  return it->value();
}

// The TCP socket under a plain or a TLS connection: where options, the peer watch and closing apply.
net::ip::tcp::socket& tcp(net::ip::tcp::socket& socket) {
  return socket;
}
net::ip::tcp::socket& tcp(net::ssl::stream<net::ip::tcp::socket>& stream) {
  return stream.next_layer();
}

// `Stream`: a TCP socket, or a TLS stream over one (its handshake done).
template <class Stream>
class session {
 public:
  session(Stream socket, path_registry& registry, std::size_t endpoint, const net::yield_context& yield)
      : socket_(std::move(socket)),
        registry_(registry),
        endpoint_(endpoint),
        yield_(yield),
        timer_(socket_.get_executor()),
        watch_(tcp(socket_)),
        watchdog_(tcp(socket_), idle_timeout) {
    registry_.connection_opened(endpoint_);
  }
  session(const session&) = delete;
  session& operator=(const session&) = delete;
  ~session() { registry_.connection_closed(endpoint_); }

  void run() {
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(header_limit);
      parser.body_limit(boost::none);  // checked below: /__sink takes bodies of any size
      beast::error_code ec;
      watchdog_.touch();
      http::async_read_header(socket_, buffer_, parser, yield_[ec]);
      if (!ec) {
        const std::string_view target(parser.get().target().data(), parser.get().target().size());
        if (target.starts_with("/__sink") || target.starts_with("/__bytes")) {
          if (!stream_request(parser)) return;
          continue;
        }
        if (parser.content_length().value_or(0) > body_limit) {
          reply(413, R"({"error":"body too large"})", false);
          return;
        }
        parser.body_limit(body_limit);
        watchdog_.touch();
        http::async_read(socket_, buffer_, parser, yield_[ec]);
      }
      if (ec) {
        if (is_malformed(ec)) reply(400, R"({"error":"bad request"})", false);
        return;
      }
      const auto& req = parser.get();
      const auto verb = req.method();
      request_view view{verb == http::verb::get,
                        verb == http::verb::post,
                        verb == http::verb::put || verb == http::verb::patch || verb == http::verb::delete_,
                        req.target(),
                        {field(req, "X-Request-Timeout-Ms"),
                         field(req, "X-Request-Id"),
                         field(req, "traceparent"),
                         field(req, "Accept-Encoding"),
                         {}},
                        endpoint_};
      request_ = &req;
      for (const auto& name : registry_.recorded_names()) {
        std::string joined;
        for (const auto& f : boost::make_iterator_range(req.equal_range(name))) {
          if (!joined.empty()) joined += ", ";
          joined.append(f.value().data(), f.value().size());
        }
        if (req.find(name) != req.end()) view.headers.recorded.emplace_back(name, std::move(joined));
      }
      if (!registry_.recorded_names().empty()) {  // and what no header says: the method and the body
        view.headers.recorded.emplace_back("@method", std::string(req.method_string()));
        view.headers.recorded.emplace_back("@body", req.body());
      }
      const auto act = handle_request(view, registry_);
      const bool keep_alive = req.keep_alive() && !act.close;
      const bool go_on = act.downstream ? serve(act, keep_alive) : reply(act.status, act.body, keep_alive);
      if (!go_on) return;
    }
  }

 private:
  // The streaming paths, for pass-through tests and benchmarks (any method): /__sink reads the request's
  // body, of any size and framing, in 64 KiB pieces and throws it away, then answers
  // {"received":N,"method":"M"}; /__bytes?n=N answers N bytes ('x') with a Content-Length, or chunked
  // with &chunked=1, written in 64 KiB pieces. Neither holds a whole body.
  bool stream_request(http::request_parser<http::string_body>& head) {
    http::request_parser<http::buffer_body> parser(std::move(head));
    const auto& req = parser.get();
    const bool keep_alive = req.keep_alive();
    const std::string target(req.target());
    const std::string method(req.method_string());
    std::vector<char> piece(64 * 1024, 'x');
    std::uint64_t received = 0;
    while (!parser.is_done()) {
      parser.get().body().data = piece.data();
      parser.get().body().size = piece.size();
      beast::error_code ec;
      watchdog_.touch();
      http::async_read(socket_, buffer_, parser, yield_[ec]);
      if (ec && ec != http::error::need_buffer) return false;
      received += piece.size() - parser.get().body().size;
    }
    if (target.starts_with("/__sink")) {
      const std::string body =
          R"({"received":)" + std::to_string(received) + R"(,"method":")" + method + "\"}";
      return reply(200, body, keep_alive);
    }
    std::uint64_t n = 0;
    if (const auto at = target.find("n="); at != std::string::npos)
      n = std::strtoull(target.c_str() + at + 2, nullptr, 10);
    const bool chunked = target.find("chunked=1") != std::string::npos;
    head_ = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n";
    head_ += chunked ? "Transfer-Encoding: chunked\r\n" : "Content-Length: " + std::to_string(n) + "\r\n";
    if (!keep_alive) head_ += "Connection: close\r\n";
    head_ += "\r\n";
    if (write(head_)) return false;
    for (std::uint64_t left = n; left > 0;) {
      const auto size = static_cast<std::size_t>(std::min<std::uint64_t>(left, piece.size()));
      char line[24];
      const int len = chunked ? std::snprintf(line, sizeof line, "%zx\r\n", size) : 0;
      if (write(std::string_view(line, static_cast<std::size_t>(len)), std::string_view(piece.data(), size)))
        return false;
      if (chunked && write("\r\n")) return false;
      left -= size;
    }
    if (chunked && write("0\r\n\r\n")) return false;
    return finish(keep_alive);
  }

  // Sends a complete reply; returns whether the connection stays open.
  bool reply(unsigned status, std::string_view body, bool keep_alive) {
    head_.clear();
    append_head(head_, status, body.size(), keep_alive);
    return !write(head_, body) && finish(keep_alive);
  }

  // Performs a downstream request per its behaviour; returns whether the connection stays open.
  bool serve(const request_action& act, bool keep_alive) {
    const behaviour& how = act.ticket.how;
    if (how.how == mode::hang) {
      if (!pause(hang_limit)) registry_.count_cancelled(act.ticket);
      return false;
    }
    if (how.how == mode::interim &&
        !sent(act, write("HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"))) {
      return false;
    }
    if (!pause(how.delay)) {
      registry_.count_cancelled(act.ticket);
      return false;
    }

    std::string_view body;
    unsigned status = 200;
    switch (how.how) {
      case mode::reset: {
        beast::error_code ignored;
        tcp(socket_).set_option(net::socket_base::linger(true, 0), ignored);
        tcp(socket_).close(ignored);
        return false;
      }
      case mode::drip:
        return drip(act, keep_alive);
      case mode::slowheaders:
        return slow_headers(act, keep_alive);
      case mode::chunked:
        return chunked(act, keep_alive, "chunked");
      case mode::gzipchunked:
        return chunked(act, keep_alive, "gzip, chunked");
      case mode::compressed:
      case mode::zipbomb:
      case mode::badgzip:
      case mode::brotli:
        return encoded(act, keep_alive);
      case mode::fail:
      case mode::unavailable:
        body = fail_body;
        status = how.how == mode::fail ? 500 : 503;
        break;
      case mode::items:
        body_.clear();
        if (!append_items_body(body_, act.name, act.whole_query)) status = 400;
        body = body_;
        break;
      case mode::garbage:
        body = garbage_body;
        break;
      case mode::notobject:
        body = notobject_body;
        break;
      case mode::big:
        body = big_body();
        break;
      case mode::ok:
      case mode::hang:
      case mode::interim:
      case mode::flaky:  // resolved per request to ok or unavailable
        body = ok_body(act);
        break;
    }
    head_.clear();
    append_head(head_, status, body.size(), keep_alive, "application/json", {}, extra_fields(act));
    return sent(act, write(head_, body)) && finish(keep_alive);
  }

  // The path's own body when it has one (filled in from the request if it is a template), else the body
  // generated from the request.
  std::string_view ok_body(const request_action& act) {
    const body_template* own = act.ticket.body;
    if (own && own->verbatim()) return own->text();
    body_.clear();
    if (!own) {
      append_ok_body(body_, act.name, act.sku, act.query);
      return body_;
    }
    std::vector<std::string_view> headers;
    for (const auto& name : own->header_names()) headers.push_back(field(*request_, name));
    own->expand(body_, {act.name, act.whole_query, headers});
    return body_;
  }

  // The path's own header fields, if it has some.
  static std::string_view extra_fields(const request_action& act) {
    return act.ticket.headers ? std::string_view(*act.ticket.headers) : std::string_view();
  }

  // The modes that answer in a content coding (encoded_replies.hpp).
  bool encoded(const request_action& act, bool keep_alive) {
    const auto reply = encode_reply(act.ticket.how.how, ok_body(act), field(*request_, "Accept-Encoding"));
    head_.clear();
    append_head(head_, 200, reply.body.size(), keep_alive, "application/json", reply.coding,
                extra_fields(act));
    return sent(act, write(head_, reply.body)) && finish(keep_alive);
  }

  bool drip(const request_action& act, bool keep_alive) {
    const std::string body = padded_object(drip_body_size);
    head_.clear();
    append_head(head_, 200, body.size(), keep_alive);
    if (!sent(act, write(head_))) return false;
    for (std::size_t i = 0; i < body.size(); ++i) {
      if (!pause(drip_interval)) return sent(act, net::error::connection_reset);
      if (!sent(act, write(std::string_view(body).substr(i, 1)))) return false;
    }
    return finish(keep_alive);
  }

  // The ok body in two chunks (the first with an extension), after the header fields a real service sends,
  // labelled with the transfer coding `coding`.
  bool chunked(const request_action& act, bool keep_alive, std::string_view coding) {
    const std::string_view body = ok_body(act);
    const auto half = body.size() / 2;
    auto chunk_size = [](std::size_t n) {
      char text[17];
      const int len = std::snprintf(text, sizeof text, "%zx", n);
      return std::string(text, static_cast<std::size_t>(len));
    };
    head_ =
        "HTTP/1.1 200 OK\r\nDate: Mon, 30 Nov 2026 12:00:00 GMT\r\nServer: mock-downstream\r\n"
        "Content-Type: application/json; charset=utf-8\r\nCache-Control: no-store\r\n"
        "Vary: Accept-Encoding\r\nX-Request-Id: mock\r\nTransfer-Encoding: ";
    head_ += coding;
    head_ += "\r\n";
    head_ += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
    head_ += chunk_size(half) + ";part=1\r\n";
    head_ += body.substr(0, half);
    head_ += "\r\n" + chunk_size(body.size() - half) + "\r\n";
    head_ += body.substr(half);
    head_ += "\r\n0\r\n\r\n";
    return sent(act, write(head_)) && finish(keep_alive);
  }

  bool slow_headers(const request_action& act, bool keep_alive) {
    const std::string_view body = ok_body(act);
    head_.clear();
    append_head(head_, 200, body.size(), keep_alive);
    const std::string_view head = head_;
    const auto status_end = head.find("\r\n") + 2;
    if (!sent(act, write(head.substr(0, status_end)))) return false;
    for (std::size_t i = status_end; i < head.size(); ++i) {
      if (!pause(drip_interval)) return sent(act, net::error::connection_reset);
      if (!sent(act, write(head.substr(i, 1)))) return false;
    }
    return sent(act, write(body)) && finish(keep_alive);
  }

  // Waits `d` unless the client closes the connection meanwhile; returns false when it did.
  bool pause(std::chrono::steady_clock::duration d) {
    if (d <= d.zero()) return true;
    watchdog_.suspend();
    timer_.expires_after(d);
    watch_.start([this] { timer_.cancel(); });
    beast::error_code ec;
    timer_.async_wait(yield_[ec]);
    const bool closed = watch_.peer_closed();
    watch_.stop();
    return !closed;
  }

  beast::error_code write(std::string_view first, std::string_view second = {}) {
    const std::array<net::const_buffer, 2> buffers{net::buffer(first), net::buffer(second)};
    beast::error_code ec;
    watchdog_.touch();
    net::async_write(socket_, buffers, yield_[ec]);
    return ec;
  }

  // Counts a write that failed because the client went away; returns whether the write succeeded.
  bool sent(const request_action& act, const beast::error_code& ec) {
    if (ec && !watchdog_.expired()) registry_.count_cancelled(act.ticket);
    return !ec;
  }

  bool finish(bool keep_alive) {
    if (keep_alive) return true;
    beast::error_code ignored;
    tcp(socket_).shutdown(net::ip::tcp::socket::shutdown_send, ignored);
    return false;
  }

  Stream socket_;
  path_registry& registry_;
  const std::size_t endpoint_;
  net::yield_context yield_;
  net::steady_timer timer_;
  peer_watch watch_;
  idle_watchdog watchdog_;
  beast::flat_buffer buffer_;
  std::string head_;
  std::string body_;
  const http::request<http::string_body>* request_ = nullptr;  // the one being served (in its parser)
};

}  // namespace

void run_session(net::ip::tcp::socket socket, path_registry& registry, std::size_t endpoint,
                 const net::yield_context& yield) {
  session<net::ip::tcp::socket> s(std::move(socket), registry, endpoint, yield);
  s.run();
}

void run_session(net::ssl::stream<net::ip::tcp::socket> stream, path_registry& registry, std::size_t endpoint,
                 const net::yield_context& yield) {
  session<net::ssl::stream<net::ip::tcp::socket>> s(std::move(stream), registry, endpoint, yield);
  s.run();
}

}  // namespace mock
