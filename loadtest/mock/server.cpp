#include "loadtest/mock/server.hpp"

#include "loadtest/mock/session.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/context/fixedsize_stack.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <exception>

namespace mock {
namespace {

namespace net = boost::asio;
using net::ip::tcp;

// 64 KiB is ample for the session's frames (buffers live on the heap) and keeps 10k idle connections
// below ~700 MiB.
constexpr std::size_t stack_size = 64 * 1024;

void log_failure(std::exception_ptr failure, const char* what) {
  if (!failure) return;
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    spdlog::error("{} failed: {}", what, e.what());
  } catch (...) {
    spdlog::error("{} failed with an unknown exception", what);
  }
}

// Running out of descriptors or memory: the error repeats until a connection closes, so wait a bit.
bool is_resource_exhaustion(const boost::system::error_code& ec) {
  const int code = ec.value();
  return ec.category() == boost::system::system_category() &&
         (code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM);
}

}  // namespace

server::server(const tcp::endpoint& listen, unsigned threads, path_registry& registry)
    : registry_(registry),
      workers_([threads] {
        std::vector<std::unique_ptr<worker>> w;
        for (unsigned i = 0; i < std::max(threads, 1u); ++i) w.push_back(std::make_unique<worker>());
        return w;
      }()),
      acceptor_(workers_.front()->context) {
  acceptor_.open(listen.protocol());
  acceptor_.set_option(net::socket_base::reuse_address(true));
  acceptor_.bind(listen);
  acceptor_.listen(net::socket_base::max_listen_connections);
}

server::~server() {
  stop();
}

void server::start() {
  net::spawn(
      acceptor_.get_executor(), [this](const net::yield_context& yield) { accept_loop(yield); },
      [](std::exception_ptr e) { log_failure(e, "accept loop"); });
  for (auto& w : workers_) {
    w->thread = std::thread([&context = w->context] { context.run(); });
  }
}

void server::stop() {
  for (auto& w : workers_) {
    w->work.reset();
    w->context.stop();
  }
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
  // The threads are gone: the suspended coroutines are unwound when the io_contexts are destroyed.
  boost::system::error_code ignored;
  acceptor_.close(ignored);
}

void server::accept_loop(const net::yield_context& yield) {
  std::size_t next = 0;
  net::steady_timer backoff(acceptor_.get_executor());
  for (;;) {
    auto& target = *workers_[next++ % workers_.size()];
    boost::system::error_code ec;
    tcp::socket socket(acceptor_.async_accept(target.context.get_executor(), yield[ec]));
    if (!acceptor_.is_open() || ec == net::error::operation_aborted) return;
    if (ec) {
      if (is_resource_exhaustion(ec)) {
        spdlog::warn("accept: {}", ec.message());
        backoff.expires_after(std::chrono::milliseconds(50));
        backoff.async_wait(yield[ec]);
      }
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    spawn_session(std::move(socket));
  }
}

void server::spawn_session(tcp::socket socket) {
  const auto executor = socket.get_executor();
  net::spawn(
      executor, std::allocator_arg, boost::context::fixedsize_stack(stack_size),
      [this, s = std::move(socket)](const net::yield_context& yield) mutable {
        run_session(std::move(s), registry_, yield);
      },
      [](std::exception_ptr e) { log_failure(e, "session"); });
}

}  // namespace mock
