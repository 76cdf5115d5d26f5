#include "gateway/server/server.hpp"

#include "gateway/core/io_thread.hpp"
#include "gateway/core/stack_cache.hpp"
#include "gateway/downstream/http_downstream.hpp"
#include "gateway/server/request_handler.hpp"
#include "gateway/server/session.hpp"
#include "gateway/sql/postgres_downstream.hpp"
#include "gateway/sql/sqlite_downstream.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <map>
#include <stdexcept>
#include <thread>

namespace gateway {

namespace net = boost::asio;
using boost::system::error_code;

namespace {

struct worker {
  net::io_context ioc{1};
  net::executor_work_guard<net::io_context::executor_type> guard{ioc.get_executor()};
  session_registry sessions;
};

}  // namespace

struct server::impl {
  gateway_config config;
  std::vector<std::unique_ptr<worker>> workers;
  std::map<std::string, std::unique_ptr<downstream>> downstreams;
  std::unique_ptr<request_handler> handler;
  std::unique_ptr<net::ip::tcp::acceptor> acceptor;
  std::atomic<bool> stopping{false};
  std::size_t next_worker = 0;

  void accept_loop(net::yield_context yield) {
    net::steady_timer backoff(yield.get_executor());
    while (!stopping) {
      auto& target = *workers[next_worker];
      const std::size_t index = next_worker;
      next_worker = (next_worker + 1) % workers.size();
      error_code ec;
      net::ip::tcp::socket socket(target.ioc);
      acceptor->async_accept(socket, yield[ec]);
      if (ec) {
        if (ec == net::error::operation_aborted || stopping) return;
        spdlog::warn("accept failed: {}", ec.message());
        backoff.expires_after(milliseconds(50));  // e.g. out of file descriptors: don't spin
        backoff.async_wait(yield[ec]);
        continue;
      }
      net::spawn(
          target.ioc.get_executor(), std::allocator_arg, stack_cache(config.server.stack_bytes()),
          [this, index, s = std::move(socket)](net::yield_context session_yield) mutable {
            session_context ctx{handler.get(), &config.limits, &workers[index]->sessions, index};
            run_session(std::move(s), ctx, session_yield);
          },
          [](std::exception_ptr e) {
            if (!e) return;
            try {
              std::rethrow_exception(e);
            } catch (const std::exception& ex) {
              spdlog::error("connection ended with an exception: {}", ex.what());
            }
          });
    }
  }
};

server::server(const gateway_config& config) : impl_(std::make_unique<impl>()) {
  impl_->config = config;
  const auto& cfg = impl_->config;
  unsigned threads = cfg.server.threads;
  if (threads == 0) threads = std::max(1U, std::thread::hardware_concurrency());
  std::vector<net::io_context*> iocs;
  for (unsigned i = 0; i < threads; ++i) {
    impl_->workers.push_back(std::make_unique<worker>());
    iocs.push_back(&impl_->workers.back()->ioc);
  }
  for (const auto& d : cfg.downstreams) {
    auto& slot = impl_->downstreams[d.name];
    if (d.kind == downstream_kind::http) {
      slot = std::make_unique<http_downstream>(d, iocs);
    } else if (d.sql.driver == sql_driver::sqlite) {
      slot = std::make_unique<sqlite_downstream>(d);
    } else {
      slot = std::make_unique<postgres_downstream>(d);
    }
  }

  std::vector<std::vector<downstream*>> targets;
  for (const auto& route : cfg.routes) {
    auto& row = targets.emplace_back();
    for (const auto& call : route.calls) row.push_back(impl_->downstreams.at(call.downstream).get());
  }
  impl_->handler = std::make_unique<request_handler>(cfg, std::move(targets));

  auto& ioc = impl_->workers.front()->ioc;
  error_code ec;
  const auto address = net::ip::make_address(cfg.server.listen.host, ec);
  if (ec) throw std::runtime_error("server.listen: invalid address '" + cfg.server.listen.host + "'");
  const net::ip::tcp::endpoint endpoint(address, cfg.server.listen.port);
  impl_->acceptor = std::make_unique<net::ip::tcp::acceptor>(ioc);
  impl_->acceptor->open(endpoint.protocol());
  impl_->acceptor->set_option(net::socket_base::reuse_address(true));
  impl_->acceptor->bind(endpoint, ec);
  if (ec)
    throw std::runtime_error("cannot listen on " + cfg.server.listen.host + ":" +
                             std::to_string(cfg.server.listen.port) + ": " + ec.message());
  impl_->acceptor->listen(net::socket_base::max_listen_connections);
}

server::~server() = default;

net::ip::tcp::endpoint server::local_endpoint() const {
  return impl_->acceptor->local_endpoint();
}

std::size_t server::threads() const {
  return impl_->workers.size();
}

void server::run() {
  net::spawn(
      impl_->workers.front()->ioc, [this](net::yield_context yield) { impl_->accept_loop(yield); },
      [](std::exception_ptr e) {
        // The accept loop ends only on stop(); an exception here is a bug, and a gateway that no longer
        // accepts must die loudly (so that it is restarted) rather than linger.
        if (e) std::rethrow_exception(e);
      });
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < impl_->workers.size(); ++i) {
    threads.emplace_back([this, i] {
      mark_io_thread();
      impl_->workers[i]->ioc.run();
    });
  }
  mark_io_thread();
  impl_->workers.front()->ioc.run();
  for (auto& t : threads) t.join();
}

void server::stop() {
  if (impl_->stopping.exchange(true)) return;
  net::post(impl_->workers.front()->ioc, [this] {
    error_code ignored;
    impl_->acceptor->close(ignored);
  });
  for (std::size_t i = 0; i < impl_->workers.size(); ++i) {
    auto& w = *impl_->workers[i];
    net::post(w.ioc, [this, &w, i] {
      w.sessions.close_all();
      for (auto& [name, d] : impl_->downstreams) d->close_idle(i);
      w.guard.reset();
    });
  }
}

}  // namespace gateway
