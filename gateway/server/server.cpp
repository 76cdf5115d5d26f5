#include "gateway/server/server.hpp"

#include "gateway/config/config_json.hpp"
#include "gateway/core/io_thread.hpp"
#include "gateway/core/memory_budget.hpp"
#include "gateway/core/stack_cache.hpp"
#include "gateway/core/usable_cpus.hpp"
#include "gateway/downstream/host_resolver.hpp"
#include "gateway/downstream/http_downstream.hpp"
#include "gateway/observe/logging.hpp"
#include "gateway/observe/metrics.hpp"
#include "gateway/server/acceptor.hpp"
#include "gateway/server/admin.hpp"
#include "gateway/server/certificate_reloader.hpp"
#include "gateway/server/graceful_drain.hpp"
#include "gateway/server/heartbeat.hpp"
#include "gateway/server/request_handler.hpp"
#include "gateway/server/server_state.hpp"
#include "gateway/server/session_registry.hpp"
#include "gateway/sql/postgres_downstream.hpp"
#include "gateway/sql/sqlite_downstream.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <map>
#include <thread>
#include <utility>

namespace gateway {

namespace net = boost::asio;

namespace {

struct worker {
  // Each socket is used by its own thread only (see acceptor): no reactor I/O locks. Other threads
  // still post to it (SQLite results, the hand-off of a connection, stop), so the scheduler keeps its lock.
  net::io_context ioc{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
  net::executor_work_guard<net::io_context::executor_type> guard{ioc.get_executor()};
  session_registry sessions;
  heartbeat beat{ioc};
};

}  // namespace

// Owns everything the process runs; members are destroyed in reverse order, so whatever holds a timer
// or a socket of an I/O thread comes after `workers`.
struct server::impl {
  gateway_config config;
  server_state state;
  std::vector<std::unique_ptr<worker>> workers;
  host_resolver resolver;  // its thread stops after the downstreams that share its addresses
  std::map<std::string, std::unique_ptr<downstream>> downstreams;
  std::vector<const sql_downstream*> sql_downstreams;
  std::vector<const circuit_breaker*> breakers;  // of the downstreams that have one, in config order
  std::vector<const http_downstream*> http_downstreams;
  std::vector<std::pair<std::string, const stale_cache*>> stale_caches;
  std::unique_ptr<metrics_registry> metrics;
  std::unique_ptr<access_log> log;
  std::unique_ptr<request_handler> handler;
  std::unique_ptr<certificate_reloader> certificates;  // with server.tls
  std::unique_ptr<acceptor> listener;
  std::unique_ptr<graceful_drain> drain;
  admin_sources admin_view;
  std::unique_ptr<admin_server> admin;

  void build_downstreams(const std::vector<net::io_context*>& iocs);
  void close_listener();
  void stop();
};

void server::impl::build_downstreams(const std::vector<net::io_context*>& iocs) {
  for (const auto& d : config.downstreams) {
    auto& slot = downstreams[d.name];
    if (d.kind == downstream_kind::http) {
      auto http = std::make_unique<http_downstream>(d, iocs, resolver);
      http_downstreams.push_back(http.get());
      slot = std::move(http);
    } else {
      std::unique_ptr<sql_downstream> sql;
      if (d.sql.driver == sql_driver::sqlite) {
        sql = std::make_unique<sqlite_downstream>(d);
      } else {
        sql = std::make_unique<postgres_downstream>(d);
      }
      sql_downstreams.push_back(sql.get());
      slot = std::move(sql);
    }
    if (d.stale.enabled || d.stale.cache) {
      const auto max_stale = d.stale.enabled ? clock::duration(d.stale.max_stale) : clock::duration(0);
      slot->set_stale(std::make_unique<stale_cache>(d.stale.max_bytes, max_stale, d.stale.cache));
      stale_caches.emplace_back(d.name, slot->stale());
    }
    if (d.breaker.enabled) {
      slot->set_breaker(std::make_unique<circuit_breaker>(d.name, d.breaker));
      breakers.push_back(slot->breaker());
    }
  }
  // Names resolve in the background; give them a moment so that the first requests find them.
  resolver.start(std::chrono::seconds(2));
}

// The drain's step 2, on I/O thread 0: no new connections, no new requests on kept-alive ones.
void server::impl::close_listener() {
  listener->close();
  for (auto& w : workers) net::post(w->ioc, [&w = *w] { w.sessions.close_idle(); });
}

void server::impl::stop() {
  if (state.stopping.exchange(true)) return;
  admin->stop();
  net::post(workers.front()->ioc, [this] {
    listener->close();
    drain->cancel();
  });
  for (std::size_t i = 0; i < workers.size(); ++i) {
    auto& w = *workers[i];
    net::post(w.ioc, [this, &w, i] {
      w.beat.stop();
      w.sessions.close_all();
      for (auto& [name, d] : downstreams) d->close_idle(i);
      w.guard.reset();
    });
  }
}

server::server(const gateway_config& config) : impl_(std::make_unique<impl>()) {
  impl_->config = config;
  const auto& cfg = impl_->config;
  stack_cache::set_max_cached_per_thread(cfg.server.stack_cache);
  const auto budget =
      cfg.limits.memory_budget != 0 ? cfg.limits.memory_budget : memory_budget::derive_default();
  memory_budget::configure(budget);
  spdlog::info("memory budget for buffered answers: {} MiB", budget >> 20);
  unsigned threads = cfg.server.threads;
  if (threads == 0) threads = usable_cpus();
  std::vector<net::io_context*> iocs;
  for (unsigned i = 0; i < threads; ++i) {
    impl_->workers.push_back(std::make_unique<worker>());
    iocs.push_back(&impl_->workers.back()->ioc);
  }
  impl_->metrics = std::make_unique<metrics_registry>(cfg, threads);
  if (cfg.log.access) impl_->log = std::make_unique<access_log>(cfg.log.format);
  impl_->build_downstreams(iocs);

  std::vector<std::vector<downstream*>> targets;
  for (const auto& route : cfg.routes) {
    auto& row = targets.emplace_back();
    for (const auto& call : route.calls) row.push_back(impl_->downstreams.at(call.downstream).get());
    if (route.proxy) row.push_back(impl_->downstreams.at(route.proxy->downstream).get());
  }
  impl_->handler = std::make_unique<request_handler>(cfg, std::move(targets), *impl_->metrics);

  if (cfg.server.tls.enabled) impl_->certificates = std::make_unique<certificate_reloader>(cfg.server.tls);
  std::vector<acceptor::io_thread> io_threads;
  for (std::size_t i = 0; i < threads; ++i) {
    auto& w = *impl_->workers[i];
    io_threads.push_back({&w.ioc,
                          {impl_->handler.get(), &cfg, &w.sessions, &impl_->state, &impl_->metrics->worker(i),
                           impl_->log.get(), i, impl_->certificates.get()}});
    impl_->admin_view.heartbeats.push_back(&w.beat);
  }
  impl_->listener = std::make_unique<acceptor>(cfg, impl_->state, std::move(io_threads));
  impl_->drain = std::make_unique<graceful_drain>(
      impl_->workers.front()->ioc, cfg.shutdown, impl_->state, [this] { impl_->close_listener(); },
      [this] { impl_->stop(); });

  auto& view = impl_->admin_view;
  view.state = &impl_->state;
  view.stall_threshold = cfg.admin.stall_threshold;
  view.databases = impl_->sql_downstreams;
  view.breakers = impl_->breakers;
  view.http_downstreams = impl_->http_downstreams;
  view.stale_caches = impl_->stale_caches;
  view.metrics = impl_->metrics.get();
  view.log = impl_->log.get();
  view.certificates = impl_->certificates.get();
  view.config_json = effective_config_json(cfg).dump(2) + "\n";
  impl_->admin = std::make_unique<admin_server>(
      cfg.admin.listen, [this](std::string_view path) { return answer_admin(path, impl_->admin_view); });
}

server::~server() {
  impl_->admin.reset();  // its thread reads the rest
}

net::ip::tcp::endpoint server::local_endpoint() const {
  return impl_->listener->local_endpoint();
}

net::ip::tcp::endpoint server::admin_endpoint() const {
  return impl_->admin->local_endpoint();
}

std::size_t server::threads() const {
  return impl_->workers.size();
}

void server::run(const std::function<void()>& on_started) {
  impl_->listener->start();
  if (impl_->certificates) impl_->certificates->start();
  for (std::size_t i = 0; i < impl_->workers.size(); ++i)
    impl_->workers[i]->beat.start(impl_->metrics->worker(i), impl_->state);
  impl_->state.started =
      true;  // the listener has been listening since construction; the accept loop is queued
  impl_->admin->start();
  if (on_started) on_started();
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

void server::drain() {
  impl_->drain->begin();
}

void server::stop() {
  impl_->stop();
}

}  // namespace gateway
