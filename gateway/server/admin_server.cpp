#include "gateway/server/admin_server.hpp"

#include "gateway/server/response_head.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

#include <array>
#include <atomic>
#include <list>
#include <stdexcept>
#include <thread>

namespace gateway {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;

struct admin_server::impl {
  static constexpr std::size_t max_connections = 64;  // probes and scrapers, not traffic
  static constexpr auto io_timeout = std::chrono::seconds(5);

  net::io_context ioc{1};
  net::ip::tcp::acceptor acceptor{ioc};
  handler answer;
  std::thread thread;
  std::atomic<bool> stopping{false};
  std::size_t open = 0;                      // admin thread only
  std::list<net::ip::tcp::socket*> sockets;  // admin thread only
  std::chrono::steady_clock::duration period{};
  std::function<void()> periodic;  // every(): run each `period`
  net::steady_timer ticker{ioc};

  void serve(net::ip::tcp::socket socket, net::yield_context yield) {
    beast::tcp_stream stream(std::move(socket));
    auto listed = sockets.insert(sockets.end(), &stream.socket());
    beast::flat_buffer buffer(16 * 1024);
    error_code ec;
    while (!stopping) {
      http::request_parser<http::string_body>
          parser;  // a body is read (and ignored) so that it can be refused
      parser.header_limit(8 * 1024);
      parser.body_limit(64 * 1024);
      stream.expires_after(io_timeout);
      http::async_read(stream, buffer, parser, yield[ec]);
      if (ec) break;
      const auto& req = parser.get();
      admin_reply reply;
      const std::string_view target(req.target().data(), req.target().size());
      try {
        error_code peer_ec;
        const auto peer = stream.socket().remote_endpoint(peer_ec);
        const auto auth = req[http::field::authorization];
        const bool head = req.method() == http::verb::head;
        reply =
            answer({.method = head ? std::string_view("GET")
                                   : std::string_view(req.method_string().data(), req.method_string().size()),
                    .path = target.substr(0, target.find('?')),
                    .authorization = std::string_view(auth.data(), auth.size()),
                    .loopback = !peer_ec && peer.address().is_loopback()});
      } catch (const std::exception& e) {
        spdlog::error("admin request {} failed: {}", target, e.what());
        reply = {500, "text/plain; charset=utf-8", "internal error\n"};
      }
      const bool keep_alive = req.keep_alive() && !stopping;
      const std::string head = serialize({.status = reply.status,
                                          .content_type = reply.content_type,
                                          .content_length = reply.body.size(),
                                          .no_store = true,
                                          .allow = reply.allow,
                                          .keep_alive = keep_alive,
                                          .fields = reply.fields});
      std::array<net::const_buffer, 2> parts{net::buffer(head), net::buffer(reply.body)};
      if (req.method() == http::verb::head) parts[1] = net::const_buffer();
      net::async_write(stream, parts, yield[ec]);
      if (ec || !keep_alive) break;
    }
    sockets.erase(listed);
    stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ec);
    stream.close();
  }

  void accept_loop(net::yield_context yield) {
    while (!stopping) {
      error_code ec;
      net::ip::tcp::socket socket(ioc);
      acceptor.async_accept(socket, yield[ec]);
      if (ec) {
        if (stopping || ec == net::error::operation_aborted) return;
        net::steady_timer pause(ioc, std::chrono::milliseconds(50));
        pause.async_wait(yield[ec]);
        continue;
      }
      if (open >= max_connections) continue;  // the socket closes here
      ++open;
      net::spawn(
          ioc,
          [this, s = std::move(socket)](net::yield_context y) mutable {
            serve(std::move(s), y);
            --open;
          },
          [](std::exception_ptr e) {
            if (e) spdlog::error("admin connection ended with an exception");
          });
    }
  }
};

admin_server::admin_server(const listen_address& listen, handler h) : impl_(std::make_unique<impl>()) {
  impl_->answer = std::move(h);
  error_code ec;
  const auto address = net::ip::make_address(listen.host, ec);
  if (ec) throw std::runtime_error("admin.listen: invalid address '" + listen.host + "'");
  const net::ip::tcp::endpoint endpoint(address, listen.port);
  impl_->acceptor.open(endpoint.protocol());
  impl_->acceptor.set_option(net::socket_base::reuse_address(true));
  impl_->acceptor.bind(endpoint, ec);
  if (ec)
    throw std::runtime_error("cannot listen on " + listen.host + ":" + std::to_string(listen.port) +
                             " (admin): " + ec.message());
  impl_->acceptor.listen();
}

admin_server::~admin_server() {
  stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

net::ip::tcp::endpoint admin_server::local_endpoint() const {
  return impl_->acceptor.local_endpoint();
}

void admin_server::every(std::chrono::steady_clock::duration period, std::function<void()> work) {
  impl_->period = period;
  impl_->periodic = std::move(work);
}

void admin_server::start() {
  if (impl_->periodic) {
    net::spawn(
        impl_->ioc,
        [this](net::yield_context yield) {
          auto& i = *impl_;
          while (!i.stopping) {
            i.ticker.expires_after(i.period);
            error_code ec;
            i.ticker.async_wait(yield[ec]);
            if (ec || i.stopping) return;
            try {
              i.periodic();
            } catch (const std::exception& e) {
              spdlog::error("admin periodic work failed: {}", e.what());
            }
          }
        },
        [](std::exception_ptr e) {
          if (e) spdlog::error("admin periodic work stopped with an exception");
        });
  }
  net::spawn(
      impl_->ioc, [this](net::yield_context yield) { impl_->accept_loop(yield); },
      [](std::exception_ptr e) {
        if (e) spdlog::critical("admin listener stopped with an exception");
      });
  impl_->thread = std::thread([this] { impl_->ioc.run(); });
}

void admin_server::stop() {
  if (impl_->stopping.exchange(true)) return;
  net::post(impl_->ioc, [this] {
    error_code ignored;
    impl_->acceptor.close(ignored);
    impl_->ticker.cancel();
    for (auto* s : impl_->sockets) s->cancel(ignored);
  });
}

}  // namespace gateway
