#include "loadtest/mock/server.hpp"

#include "loadtest/mock/session.hpp"
#include "loadtest/mock/tls_server.hpp"

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

server::server(const std::vector<tcp::endpoint>& listen, unsigned threads, unsigned backlog) {
  for (unsigned i = 0; i < std::max(threads, 1u); ++i) workers_.push_back(std::make_unique<worker>());
  acceptors_.reserve(listen.size());
  for (const auto& address : listen) {
    auto& acceptor = acceptors_.emplace_back(workers_[acceptors_.size() % workers_.size()]->context);
    acceptor.open(address.protocol());
    acceptor.set_option(net::socket_base::reuse_address(true));
    acceptor.bind(address);
    acceptor.listen(backlog == 0 ? net::socket_base::max_listen_connections : static_cast<int>(backlog));
  }
}

server::~server() {
  stop();
}

std::vector<tcp::endpoint> server::local_endpoints() const {
  std::vector<tcp::endpoint> bound;
  for (const auto& acceptor : acceptors_) bound.push_back(acceptor.local_endpoint());
  return bound;
}

void server::start(path_registry& registry) {
  registry_ = &registry;
  for (std::size_t i = 0; i < acceptors_.size(); ++i) {
    net::spawn(
        acceptors_[i].get_executor(), [this, i](const net::yield_context& yield) { accept_loop(i, yield); },
        [](std::exception_ptr e) { log_failure(e, "accept loop"); });
  }
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
  for (auto& acceptor : acceptors_) acceptor.close(ignored);
}

void server::accept_loop(std::size_t endpoint, const net::yield_context& yield) {
  auto& acceptor = acceptors_[endpoint];
  std::size_t next = endpoint;
  net::steady_timer backoff(acceptor.get_executor());
  for (;;) {
    auto& target = *workers_[next++ % workers_.size()];
    boost::system::error_code ec;
    tcp::socket socket(acceptor.async_accept(target.context.get_executor(), yield[ec]));
    if (!acceptor.is_open() || ec == net::error::operation_aborted) return;
    if (ec) {
      if (is_resource_exhaustion(ec)) {
        spdlog::warn("accept: {}", ec.message());
        backoff.expires_after(std::chrono::milliseconds(50));
        backoff.async_wait(yield[ec]);
      }
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    spawn_session(std::move(socket), endpoint);
  }
}

void server::spawn_session(tcp::socket socket, std::size_t endpoint) {
  const auto executor = socket.get_executor();
  net::spawn(
      executor, std::allocator_arg, boost::context::fixedsize_stack(stack_size),
      [this, endpoint, s = std::move(socket)](const net::yield_context& yield) mutable {
        if (tls_ != nullptr && endpoint >= first_tls_)
          return tls_->serve(std::move(s), *registry_, endpoint, yield);
        run_session(std::move(s), *registry_, endpoint, yield);
      },
      [](std::exception_ptr e) { log_failure(e, "session"); });
}

}  // namespace mock
