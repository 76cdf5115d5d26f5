#include "gateway/server/admin_server.hpp"

#include "gateway/server/port_handoff.hpp"

#include "gateway/server/admin_connections.hpp"
#include "gateway/server/response_head.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

#include <array>
#include <atomic>
#include <stdexcept>
#include <thread>

namespace gateway {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;

namespace {

constexpr auto write_timeout = std::chrono::seconds(5);

// A peer's address as the table's key (IPv4 as IPv4-mapped IPv6).
admin_connections::address address_key(const net::ip::address& a) {
  const auto v6 = a.is_v4() ? net::ip::make_address_v6(net::ip::v4_mapped, a.to_v4()) : a.to_v6();
  return v6.to_bytes();
}

// One admin connection; owned by its coroutine. The table closes it (reset: nothing it sent is answered)
// to make room for a newer one.
struct admin_connection {
  admin_connection(net::ip::tcp::socket s, const net::ip::address& peer)
      : stream(std::move(s)), loopback(peer.is_loopback()), place(address_key(peer), [this] { reset(); }) {}

  void reset() {
    error_code ignored;
    stream.socket().set_option(net::socket_base::linger(true, 0), ignored);
    stream.close();
  }

  beast::tcp_stream stream;
  bool loopback;
  admin_connections::member place;  // after the stream: leaves the table before the stream closes
};

}  // namespace

struct admin_server::impl {
  explicit impl(const admin_settings& s)
      : header_timeout(s.header_timeout),
        idle_timeout(s.idle_timeout),
        connections(s.max_connections, s.max_connections_per_client) {}

  net::io_context ioc{1};
  net::ip::tcp::acceptor acceptor{ioc};
  handler answer;
  std::thread thread;
  std::atomic<bool> stopping{false};
  bool accepting = true;  // admin thread only; false once stop_accepting() ran
  const std::chrono::microseconds header_timeout;
  const std::chrono::microseconds idle_timeout;
  admin_connections connections;  // admin thread only
  std::uint64_t timed_out = 0;    // admin thread only
  std::chrono::steady_clock::duration period{};
  std::function<void()> periodic;  // every(): run each `period`
  net::steady_timer ticker{ioc};

  admin_reply handle(const http::request<http::string_body>& req, bool loopback) {
    const std::string_view target(req.target().data(), req.target().size());
    try {
      const auto auth = req[http::field::authorization];
      const bool head = req.method() == http::verb::head;
      return answer({.method = head
                                   ? std::string_view("GET")
                                   : std::string_view(req.method_string().data(), req.method_string().size()),
                     .path = target.substr(0, target.find('?')),
                     .authorization = std::string_view(auth.data(), auth.size()),
                     .loopback = loopback});
    } catch (const std::exception& e) {
      spdlog::error("admin request {} failed: {}", target, e.what());
      return {500, "text/plain; charset=utf-8", "internal error\n"};
    }
  }

  void serve(admin_connection& c, net::yield_context yield) {
    auto& stream = c.stream;
    beast::flat_buffer buffer(16 * 1024);
    error_code ec;
    // The first request's clock starts at the accept: a connection that sends nothing is closed in time.
    stream.expires_after(header_timeout);
    for (bool first = true; !stopping; first = false) {
      if (!first) {
        if (buffer.size() == 0) {  // kept alive: wait for the next request's first byte
          stream.expires_after(idle_timeout);
          const auto n = stream.async_read_some(buffer.prepare(1024), yield[ec]);
          if (ec || c.place.evicted()) return;
          buffer.commit(n);
        }
        stream.expires_after(header_timeout);
      }
      http::request_parser<http::string_body> parser;  // a body is read (and ignored) so it can be refused
      parser.header_limit(8 * 1024);
      parser.body_limit(64 * 1024);
      http::async_read(stream, buffer, parser, yield[ec]);
      if (ec == beast::error::timeout) ++timed_out;
      if (ec || c.place.evicted()) return;
      connections.refresh(c.place);
      const auto& req = parser.get();
      const auto reply = handle(req, c.loopback);
      const bool keep_alive = req.keep_alive() && accepting && !stopping;
      const std::string head = serialize({.status = reply.status,
                                          .content_type = reply.content_type,
                                          .content_length = reply.body.size(),
                                          .no_store = true,
                                          .allow = reply.allow,
                                          .keep_alive = keep_alive,
                                          .fields = reply.fields});
      std::array<net::const_buffer, 2> parts{net::buffer(head), net::buffer(reply.body)};
      if (req.method() == http::verb::head) parts[1] = net::const_buffer();
      stream.expires_after(write_timeout);
      net::async_write(stream, parts, yield[ec]);
      if (ec == beast::error::timeout) ++timed_out;
      if (ec || c.place.evicted()) return;
      if (!keep_alive) break;
    }
    stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ec);
    stream.close();
  }

  // Admits the connection, closing an older one if a cap is reached, and starts its coroutine.
  void start_connection(net::ip::tcp::socket socket) {
    error_code ec;
    const auto peer = socket.remote_endpoint(ec);
    if (ec) return;  // gone already
    auto c = std::make_unique<admin_connection>(std::move(socket), peer.address());
    connections.admit(c->place);
    try {
      net::spawn(
          ioc, [this, c = std::move(c)](net::yield_context y) { serve(*c, y); },
          [](std::exception_ptr e) {
            if (e) spdlog::error("admin connection ended with an exception");
          });
    } catch (const std::exception& e) {  // no stack for it: that connection is closed, the listener goes on
      spdlog::warn("admin connection refused: {}", e.what());
    }
  }

  // The connections already in the listen queue are taken and served (a close would reset them), then
  // the listener closes; those open finish their request and go.
  void close_acceptor() {
    if (!acceptor.is_open()) return;
    accepting = false;
    error_code ec;
    acceptor.non_blocking(true, ec);
    while (!ec) {
      net::ip::tcp::socket socket(ioc);
      acceptor.accept(socket, ec);
      if (ec == net::error::interrupted || ec == net::error::connection_aborted) {
        ec = {};
      } else if (!ec) {
        start_connection(std::move(socket));
      }
    }
    acceptor.close(ec);
  }

  // One accept per turn of the loop: a connection whose head is already there is read in between, before
  // enough newer ones could arrive to make it the oldest.
  void accept_loop(net::yield_context yield) {
    while (!stopping) {
      error_code ec;
      net::ip::tcp::socket socket(ioc);
      acceptor.async_accept(socket, yield[ec]);
      if (ec) {
        if (stopping || ec == net::error::operation_aborted) return;
        net::steady_timer pause(ioc, std::chrono::milliseconds(50));  // out of descriptors: let some close
        pause.async_wait(yield[ec]);
        continue;
      }
      start_connection(std::move(socket));
    }
  }
};

admin_server::admin_server(const admin_settings& settings, bool share_port, handler h)
    : impl_(std::make_unique<impl>(settings)) {
  impl_->answer = std::move(h);
  const auto& listen = settings.listen;
  error_code ec;
  const auto address = net::ip::make_address(listen.host, ec);
  if (ec) throw std::runtime_error("admin.listen: invalid address '" + listen.host + "'");
  const net::ip::tcp::endpoint endpoint(address, listen.port);
  impl_->acceptor.open(endpoint.protocol());
  impl_->acceptor.set_option(net::socket_base::reuse_address(true));
  if (share_port) {
    using reuse_port = net::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>;
    impl_->acceptor.set_option(reuse_port(true));
  }
#if defined(TCP_DEFER_ACCEPT)
  using defer_accept = net::detail::socket_option::integer<IPPROTO_TCP, TCP_DEFER_ACCEPT>;
  const auto seconds = std::chrono::ceil<std::chrono::seconds>(settings.header_timeout).count();
  impl_->acceptor.set_option(defer_accept(static_cast<int>(std::max<long long>(seconds, 1))), ec);
#endif
  impl_->acceptor.bind(endpoint, ec);
  if (ec)
    throw std::runtime_error("cannot listen on " + listen.host + ":" + std::to_string(listen.port) +
                             " (admin): " + ec.message());
  impl_->acceptor.listen(net::socket_base::max_listen_connections);
}

admin_server::~admin_server() {
  stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

net::ip::tcp::endpoint admin_server::local_endpoint() const {
  return impl_->acceptor.local_endpoint();
}

admin_connection_counts admin_server::connection_counts() const {
  const auto& i = *impl_;
  return {.open = i.connections.size(),
          .evicted_for_client = i.connections.evicted_for_client(),
          .evicted_for_total = i.connections.evicted_for_total(),
          .timed_out = i.timed_out};
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

void admin_server::hand_off_port() {
  net::post(impl_->ioc, [this] {
    auto& listener = impl_->acceptor;
    if (listener.is_open() && port_handoff::hand_off(listener.native_handle()))
      spdlog::info("drain: another process listens on the admin port too; new admin connections go to it");
  });
}

void admin_server::stop_accepting() {
  net::post(impl_->ioc, [this] { impl_->close_acceptor(); });
}

void admin_server::stop() {
  if (impl_->stopping.exchange(true)) return;
  net::post(impl_->ioc, [this] {
    error_code ignored;
    impl_->acceptor.close(ignored);
    impl_->ticker.cancel();
    impl_->connections.close_all();
  });
}

}  // namespace gateway
