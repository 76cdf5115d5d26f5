#include "gateway/server/server.hpp"

#include "gateway/config/config_json.hpp"
#include "gateway/config/config_loader.hpp"
#include "gateway/config/restart_changes.hpp"
#include "gateway/downstream/host_resolver.hpp"
#include "gateway/downstream/http_downstream.hpp"
#include "gateway/limit/redis_limiter.hpp"
#include "gateway/observe/logging.hpp"
#include "gateway/observe/metrics.hpp"
#include "gateway/observe/recent_degraded.hpp"
#include "gateway/observe/tracing.hpp"
#include "gateway/runtime/io_thread.hpp"
#include "gateway/runtime/memory_budget.hpp"
#include "gateway/runtime/usable_cpus.hpp"
#include "gateway/server/acceptor.hpp"
#include "gateway/server/admin.hpp"
#include "gateway/server/config_generation.hpp"
#include "gateway/server/edge_gate.hpp"
#include "gateway/server/graceful_drain.hpp"
#include "gateway/server/heartbeat.hpp"
#include "gateway/server/housekeeping.hpp"
#include "gateway/server/request_handler.hpp"
#include "gateway/server/server_state.hpp"
#include "gateway/server/session_registry.hpp"
#include "gateway/server/status_page.hpp"
#include "gateway/sql/postgres_downstream.hpp"
#include "gateway/sql/sqlite_downstream.hpp"
#include "gateway/tls/certificate_reloader.hpp"
#include "gateway/tls/tls_client_context.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

namespace gateway {

namespace net = boost::asio;

namespace {

struct io_thread_state {  // one I/O thread: its io_context and what lives on it
  // Each socket is used by its own thread only (see acceptor): no reactor I/O locks. Other threads
  // still post to it (SQLite results, the hand-off of a connection, stop), so the scheduler keeps its lock.
  net::io_context ioc{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
  net::executor_work_guard<net::io_context::executor_type> guard{ioc.get_executor()};
  session_registry sessions;
  heartbeat beat{ioc};
  net::steady_timer fresh_grace{ioc};  // the drain: new connections' time to send their first request
};

double unix_seconds_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The names of the running downstreams whose TLS files (ca_file, cert_file, key_file) hold something
// else than when they were loaded; `digests` gets what they all hold now.
std::vector<std::string> tls_files_changed(const config_generation& running, std::string& digests) {
  std::vector<std::string> changed;
  for (const auto& d : running.downstreams) {
    const auto& tls = d->settings.tls;
    if (tls.files_digest.empty()) continue;
    const auto now = tls_client_context::files_digest(tls);
    if (now != tls.files_digest) changed.push_back(d->settings.name);
    digests += now;
  }
  return changed;
}

// The duration buckets are those of the start (a series' `le` labels never change while the process
// lives): a deadline with no buckets of its own (added by a reload, or beyond histogram_bounds::capacity)
// still applies, but the percentiles of answers that wait for it are coarse until a restart.
void warn_uncovered_deadlines(const gateway_config& cfg, const histogram_bounds& bounds) {
  for (const auto& route : cfg.routes) {
    const auto* aggregate = route.aggregate();
    if (aggregate == nullptr || bounds.covers(aggregate->deadline)) continue;
    spdlog::warn(
        "route {}: no duration buckets at its deadline ({} ms) until a restart; its percentiles "
        "are coarse",
        route.path, std::chrono::duration_cast<std::chrono::milliseconds>(aggregate->deadline).count());
  }
}

}  // namespace

// Owns everything the process runs; members are destroyed in reverse order, so whatever holds a timer
// or a socket of an I/O thread comes after `io_thread_states`.
struct server::impl {
  gateway_config config;  // as started: the sections only a restart changes come from here
  server_state state;
  // What new requests run on, on every I/O thread (see config_generation.hpp).
  std::atomic<std::shared_ptr<const config_generation>> current;
  std::vector<std::unique_ptr<io_thread_state>> io_thread_states;
  std::vector<net::io_context*> iocs;
  host_resolver resolver;  // its thread stops after the downstreams that share its addresses
  // Every downstream built since the start (see config_generation.hpp), and those no generation uses
  // any more, each with the generation that last did (their idle connections close once it has gone).
  // Guarded by current_lock.
  std::vector<std::shared_ptr<downstream_instance>> every_downstream;
  std::vector<std::pair<std::weak_ptr<const config_generation>, std::shared_ptr<downstream_instance>>>
      retiring;
  // The Redis store of backend: redis limits (configuration's redis section, as at the start), made
  // before the first generation; destroyed before the io_contexts, which its links run on.
  std::unique_ptr<redis_limiter> redis;
  std::unique_ptr<metrics_registry> metrics;
  recent_degraded degraded_log;  // written by the request handlers, read by the status page
  std::unique_ptr<access_log> log;
  std::unique_ptr<certificate_reloader> certificates;  // with server.tls
  std::unique_ptr<tracer> tracing;                     // with tracing.enabled; flushed when run() ends
  std::unique_ptr<acceptor> listener;
  std::unique_ptr<graceful_drain> drain;
  mutable std::mutex current_lock;  // guards `every_downstream` and `retiring`
  std::mutex reload_lock;           // one reload at a time
  // The downstream TLS files' check (the watch thread): when it last ran, and what the files held at
  // the last reload it started (a failed one is not tried again until they change again).
  clock::time_point tls_checked{};
  clock::time_point keys_checked{};
  std::string tls_tried;
  reload_counters reloads;
  status_window status{clock::now()};  // the status page's samples, admin thread only
  admin_sources admin_view;
  std::unique_ptr<admin_server> admin;
  std::unique_ptr<housekeeping> watch;

  std::shared_ptr<const config_generation> current_generation() const { return current.load(); }
  std::shared_ptr<downstream_instance> build_downstream(const downstream_settings& d);
  std::shared_ptr<const config_generation> build_generation(std::shared_ptr<const gateway_config> cfg,
                                                            std::string version,
                                                            std::vector<restart_change> restart_pending,
                                                            const config_generation* previous);
  void publish(std::shared_ptr<const config_generation> next);
  reload_report reload();
  void close_retired();
  void check_tls_files();
  void check_key_files();
  void hand_off_ports();
  void close_listener();
  void stop();
};

std::shared_ptr<downstream_instance> server::impl::build_downstream(const downstream_settings& d) {
  auto built = std::make_shared<downstream_instance>();
  built->settings = d;
  if (d.kind == downstream_kind::http) {
    auto http = std::make_unique<http_downstream>(d, iocs, resolver);
    built->http = http.get();
    built->object = std::move(http);
  } else {
    std::unique_ptr<sql_downstream> sql;
    if (d.sql.driver == sql_driver::sqlite) {
      sql = std::make_unique<sqlite_downstream>(d);
    } else {
      sql = std::make_unique<postgres_downstream>(d);
    }
    built->sql = sql.get();
    built->object = std::move(sql);
  }
  auto& object = *built->object;
  if (d.stale.enabled || d.stale.cache) {
    const auto max_stale = d.stale.enabled ? clock::duration(d.stale.max_stale) : clock::duration(0);
    object.set_stale(std::make_unique<answer_cache>(d.stale.max_bytes, max_stale, d.stale.cache));
  }
  if (d.breaker.enabled) object.set_breaker(std::make_unique<circuit_breaker>(d.name, d.breaker));
  return built;
}

// A downstream of `previous` whose settings are unchanged is kept, with its pools, breakers and caches;
// the others are built. Throws (nothing published) when a downstream cannot be built.
std::shared_ptr<const config_generation> server::impl::build_generation(
    std::shared_ptr<const gateway_config> cfg, std::string version,
    std::vector<restart_change> restart_pending, const config_generation* previous) {
  auto g = std::make_shared<config_generation>();
  g->config = cfg;
  g->version = std::move(version);
  g->restart_pending = std::move(restart_pending);
  std::vector<std::shared_ptr<downstream_instance>> built;
  for (const auto& d : cfg->downstreams) {
    std::shared_ptr<downstream_instance> kept;
    if (previous != nullptr) {
      for (const auto& old : previous->downstreams) {
        if (old->settings == d) kept = old;
      }
    }
    if (!kept) {
      kept = build_downstream(d);
      built.push_back(kept);
    }
    auto& object = *kept->object;
    if (kept->http) g->http_downstreams.push_back(kept->http);
    if (kept->sql) g->databases.push_back(kept->sql);
    if (object.stale()) g->answer_caches.emplace_back(d.name, object.stale());
    if (object.breaker()) g->breakers.push_back(object.breaker());
    g->downstreams.push_back(std::move(kept));
  }
  // Names resolve in the background; give them a moment so that the first requests find them.
  resolver.start(std::chrono::seconds(2));
  g->metrics = metrics->series_for(*cfg);
  std::vector<std::vector<downstream*>> targets;
  for (const auto& route : cfg->routes) {
    auto& row = targets.emplace_back();
    if (const auto* aggregate = route.aggregate()) {
      for (const auto& call : aggregate->calls)
        row.push_back(g->downstreams[call.downstream_index]->object.get());
    } else if (const auto* proxy = route.proxy()) {
      row.push_back(g->downstreams[proxy->downstream_index]->object.get());
    }
  }
  g->handler =
      std::make_unique<request_handler>(*cfg, std::move(targets), *metrics, g->metrics, &degraded_log);
  if (std::any_of(cfg->routes.begin(), cfg->routes.end(),
                  [](const route_settings& r) { return r.auth || !r.rate_limits.empty(); })) {
    g->keys = std::make_shared<edge_keys>();
    g->keys->previous = previous != nullptr ? previous->keys.get() : nullptr;
    for (std::size_t i = 0; i < cfg->routes.size(); ++i) {
      const auto& route = cfg->routes[i];
      if (route.auth || !route.rate_limits.empty())
        g->gates.push_back(std::make_shared<edge_gate>(route, i, *g->keys, iocs.size(), g->metrics,
                                                       redis.get(), cfg->redis));
      else
        g->gates.emplace_back();
    }
    g->keys->previous = nullptr;  // the previous generation may go before this one
  }
  auto json = effective_config_json(*cfg);
  json["version"] = g->version;
  json["restart_pending"] = restart_changes_json(g->restart_pending);
  g->config_json = json.dump(2) + "\n";
  const std::lock_guard hold(current_lock);
  every_downstream.insert(every_downstream.end(), built.begin(), built.end());
  return g;
}

// Requests that start from now on, on every I/O thread, take `next`; those running finish on the
// generation they started with. The downstreams only the previous generation used close their idle
// connections once it has gone.
void server::impl::publish(std::shared_ptr<const config_generation> next) {
  const auto previous = current.exchange(next);
  if (previous) {
    const std::lock_guard hold(current_lock);
    for (const auto& old : previous->downstreams) {
      if (std::find(next->downstreams.begin(), next->downstreams.end(), old) == next->downstreams.end())
        retiring.emplace_back(previous, old);
    }
  }
}

// Housekeeping (the watch thread): retired downstreams whose last generation has gone close their idle
// connections, on each I/O thread. Their objects stay (see config_generation.hpp).
void server::impl::close_retired() {
  std::vector<std::shared_ptr<downstream_instance>> closing;
  {
    const std::lock_guard hold(current_lock);
    std::erase_if(retiring, [&](const auto& entry) {
      if (!entry.first.expired()) return false;
      closing.push_back(entry.second);
      return true;
    });
  }
  if (closing.empty() || state.stopping()) return;
  for (std::size_t i = 0; i < io_thread_states.size(); ++i) {
    net::post(io_thread_states[i]->ioc, [closing, i] {
      for (const auto& d : closing) d->object->close_idle(i);
    });
  }
  for (const auto& d : closing)
    spdlog::info("downstream '{}' retired: its idle connections closed", d->settings.name);
}

// Housekeeping (the watch thread, with server.watch_config): every 5 s, a downstream whose TLS files
// changed (cert-manager rotated a client certificate or a CA) is built anew by a reload.
// The routes' key files (JWKS, API keys), read again every 2 s on the watch thread: a changed file's
// keys replace the old ones without a reload.
void server::impl::check_key_files() {
  const auto now = clock::now();
  if (now - keys_checked < std::chrono::seconds(2)) return;
  keys_checked = now;
  if (const auto g = current.load(); g && g->keys) g->keys->check();
}

void server::impl::check_tls_files() {
  const auto now = clock::now();
  if (now - tls_checked < std::chrono::seconds(5) || state.draining()) return;
  tls_checked = now;
  std::string digests;
  const auto changed = tls_files_changed(*current.load(), digests);
  if (changed.empty() || digests == tls_tried) return;
  tls_tried = digests;
  for (const auto& name : changed)
    spdlog::info("downstream '{}': its TLS files changed; reloading the configuration", name);
  reload();
}

reload_report server::impl::reload() {
  const std::lock_guard one_at_a_time(reload_lock);
  reload_report report;
  const auto running = current_generation();
  report.version = running->version;
  // What the file it came from holds and this process cannot apply stays pending until a reload finds the
  // file back at the running values (or the process restarts).
  report.restart_required = restart_change_keys(running->restart_pending);
  const auto& path = config.source;
  if (state.draining()) {  // or stopping
    report.errors.push_back("the gateway is shutting down: no reload");
    return report;
  }
  auto fail = [&](std::vector<std::string> errors) {
    report.errors = std::move(errors);
    reloads.failed.fetch_add(1);
    spdlog::error("configuration reload failed; still running version {}", running->version);
    for (const auto& e : report.errors) spdlog::error("{}", e);
    return report;
  };
  config_error unreadable;
  const auto text = read_config_text(path, unreadable);
  if (!text) return fail({format_config_error(path, unreadable)});
  const auto version = config_version(*text);
  std::string digests;
  if (version == running->version && tls_files_changed(*running, digests).empty()) {
    report.unchanged = true;
    return report;
  }
  auto loaded = load_config_text(*text, path);
  if (!loaded.config) {
    std::vector<std::string> errors;
    for (const auto& e : loaded.errors) errors.push_back(format_config_error(path, e));
    return fail(std::move(errors));
  }
  for (const auto& w : loaded.warnings) spdlog::warn("{}", format_config_warning(path, w));
  auto next = std::make_shared<gateway_config>(std::move(*loaded.config));
  // The sections only a restart applies keep their running values (those of the start); those that
  // differ are reported.
  auto pending = restart_only_changes(config, *next);
  const auto level = next->log.level;
  next->server = config.server;
  next->limits = config.limits;
  next->log = config.log;
  next->log.level = level;
  next->admin = config.admin;
  next->shutdown = config.shutdown;
  std::shared_ptr<const config_generation> generation;
  try {
    generation = build_generation(next, version, pending, running.get());
  } catch (const std::exception& e) {
    return fail({path + ": " + e.what()});
  }
  if (level != running->config->log.level) spdlog::set_level(spdlog::level::from_str(level));
  std::size_t kept = 0;
  for (const auto& d : generation->downstreams) {
    kept +=
        std::find(running->downstreams.begin(), running->downstreams.end(), d) != running->downstreams.end();
  }
  // Counted first: whoever sees the new configuration answer also finds it counted.
  reloads.succeeded.fetch_add(1);
  reloads.last_success = unix_seconds_now();
  publish(generation);
  report.applied = true;
  report.version = version;
  report.restart_required = restart_change_keys(pending);
  spdlog::info(
      "configuration {} applied (was {}): {} routes, {} downstreams ({} kept with their connections)",
      version, running->version, next->routes.size(), next->downstreams.size(), kept);
  for (const auto& key : report.restart_required)
    spdlog::warn("configuration: {} changed in the file but only a restart applies it (still the old value)",
                 key);
  warn_uncovered_deadlines(*next, metrics->duration_bounds());
  return report;
}

// The drain's step 1b, on I/O thread 0: when a process that restarts this one shares the ports, new
// connections go to it from now on (port_handoff.hpp). Without server.reuse_port no other process can.
void server::impl::hand_off_ports() {
  if (!config.server.reuse_port) return;
  if (listener->hand_off_port())
    spdlog::info("drain: another process listens on the port too; new connections go to it");
  admin->hand_off_port();
}

// The drain's step 2, on I/O thread 0: no new connections, no new requests on kept-alive ones, and a new
// connection still waiting for its first request gets drain_idle_grace to send it (session_registry.hpp).
// The admin listener stops accepting too: a process that restarts this one may share its port, and new
// probes and scrapes belong to it now (admin_server.hpp).
void server::impl::close_listener() {
  listener->close();
  admin->stop_accepting();
  for (auto& w : io_thread_states) {
    net::post(w->ioc, [&w = *w] {
      w.sessions.close_idle(false);
      w.fresh_grace.expires_after(drain_idle_grace);
      w.fresh_grace.async_wait([&w](const boost::system::error_code& ec) {
        if (!ec) w.sessions.close_idle(true);
      });
    });
  }
}

void server::impl::stop() {
  if (state.advance(server_phase::stopping) == server_phase::stopping) return;
  admin->stop();
  // The Redis links' coroutines keep their I/O threads' io_contexts busy until they are closed.
  if (redis) redis->close();
  net::post(io_thread_states.front()->ioc, [this] {
    listener->close();
    drain->cancel();
  });
  for (std::size_t i = 0; i < io_thread_states.size(); ++i) {
    auto& w = *io_thread_states[i];
    net::post(w.ioc, [this, &w, i] {
      w.beat.stop();
      w.fresh_grace.cancel();
      w.sessions.close_all();
      std::vector<std::shared_ptr<downstream_instance>> all;
      {
        const std::lock_guard hold(current_lock);
        all = every_downstream;
      }
      for (auto& d : all) d->object->close_idle(i);
      w.guard.reset();
    });
  }
}

namespace {

// The Redis store's links, one set per I/O thread. Throws std::runtime_error when its settings are bad.
std::unique_ptr<redis_limiter> make_redis_store(const redis_store_settings& store,
                                                const std::vector<net::io_context*>& iocs) {
  std::string error;
  auto settings = parse_redis_url(store.url, error);
  if (!settings) throw std::runtime_error("redis.url: " + error);
  settings->timeout = std::chrono::duration_cast<std::chrono::milliseconds>(store.timeout);
  settings->connect_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(store.connect_timeout);
  settings->connections_per_thread = store.pool;
  settings->ca_file = store.tls.ca_file;
  settings->verify = store.tls.verify;
  if (!store.tls.server_name.empty()) settings->server_name = store.tls.server_name;
  std::vector<boost::asio::any_io_executor> executors;
  for (auto* ioc : iocs) executors.push_back(ioc->get_executor());
  auto limiter = redis_limiter::make(executors, *settings, error);
  if (!limiter) throw std::runtime_error("redis: " + error);
  return limiter;
}

}  // namespace

server::server(const gateway_config& config, const std::string& version) : impl_(std::make_unique<impl>()) {
  impl_->config = config;
  const auto& cfg = impl_->config;
  const auto budget =
      cfg.limits.memory_budget != 0 ? cfg.limits.memory_budget : memory_budget::derive_default();
  memory_budget::configure(budget);
  spdlog::info("memory budget for buffered answers: {} MiB", budget >> 20);
  unsigned threads = cfg.server.threads;
  if (threads == 0) threads = usable_cpus();
  for (unsigned i = 0; i < threads; ++i) {
    impl_->io_thread_states.push_back(std::make_unique<io_thread_state>());
    impl_->iocs.push_back(&impl_->io_thread_states.back()->ioc);
  }
  if (cfg.redis.enabled) impl_->redis = make_redis_store(cfg.redis, impl_->iocs);
  impl_->metrics = std::make_unique<metrics_registry>(threads, cfg.server.tls.enabled, duration_bounds(cfg));
  warn_uncovered_deadlines(cfg, impl_->metrics->duration_bounds());
  if (cfg.log.access) impl_->log = std::make_unique<access_log>(cfg.log.format, threads);
  auto first = impl_->build_generation(
      std::make_shared<const gateway_config>(cfg),
      version.empty() ? config_version(effective_config_json(cfg).dump()) : version, {}, nullptr);
  impl_->current.store(first);
  impl_->reloads.last_success = unix_seconds_now();

  if (cfg.server.tls.enabled) impl_->certificates = std::make_unique<certificate_reloader>(cfg.server.tls);
  if (cfg.tracing.enabled) {
    const auto& t = cfg.tracing;
    impl_->tracing = std::make_unique<tracer>(tracing_settings{.enabled = true,
                                                               .endpoint = t.endpoint,
                                                               .sample_ratio = t.sample_ratio,
                                                               .service_name = t.service_name,
                                                               .max_queue_spans = t.max_queue_spans,
                                                               .max_batch_spans = t.max_batch_spans,
                                                               .batch_delay = t.batch_delay,
                                                               .export_timeout = t.export_timeout});
  }
  std::vector<acceptor::io_thread> io_threads;
  for (std::size_t i = 0; i < threads; ++i) {
    auto& w = *impl_->io_thread_states[i];
    io_threads.push_back({&w.ioc,
                          {&impl_->current, &cfg, &w.sessions, &impl_->state, &impl_->metrics->of_thread(i),
                           impl_->log.get(), i, impl_->certificates.get(), impl_->tracing.get()}});
    impl_->admin_view.heartbeats.push_back(&w.beat);
  }
  impl_->listener = std::make_unique<acceptor>(cfg, impl_->state, std::move(io_threads));
  impl_->drain = std::make_unique<graceful_drain>(
      impl_->io_thread_states.front()->ioc, cfg.shutdown, impl_->state, [this] { impl_->hand_off_ports(); },
      [this] { impl_->close_listener(); }, [this] { impl_->stop(); });

  auto& view = impl_->admin_view;
  view.state = &impl_->state;
  view.stall_threshold = cfg.admin.stall_threshold;
  view.metrics = impl_->metrics.get();
  view.log = impl_->log.get();
  view.certificates = impl_->certificates.get();
  view.tracing = impl_->tracing.get();
  view.generation = [this] { return impl_->current_generation(); };
  view.reload = [this] { return impl_->reload(); };
  view.reloads = &impl_->reloads;
  view.token = cfg.admin.token;
  view.require_token = cfg.admin.require_token;
  view.status = &impl_->status;
  view.degraded = &impl_->degraded_log;
  impl_->admin = std::make_unique<admin_server>(
      cfg.admin, cfg.server.reuse_port,
      [this](const admin_request& request) { return answer_admin(request, impl_->admin_view); });
  view.listener = impl_->admin.get();
  impl_->admin->every(impl_->status.period(), [this] {
    impl_->status.keep(take_status_sample(impl_->admin_view, *impl_->current_generation()));
  });
}

server::~server() {
  impl_->watch.reset();  // its thread reloads
  impl_->admin.reset();  // its thread reads the rest
  // The downstreams go before the I/O threads' io_contexts, whose sockets and timers they hold.
  impl_->current.store(nullptr);
  const std::lock_guard hold(impl_->current_lock);
  impl_->retiring.clear();
  impl_->every_downstream.clear();
}

net::ip::tcp::endpoint server::local_endpoint() const {
  return impl_->listener->local_endpoint();
}

net::ip::tcp::endpoint server::admin_endpoint() const {
  return impl_->admin->local_endpoint();
}

std::size_t server::threads() const {
  return impl_->io_thread_states.size();
}

void server::run(const std::function<void()>& on_started) {
  impl_->listener->start();
  if (impl_->certificates) impl_->certificates->start();
  for (std::size_t i = 0; i < impl_->io_thread_states.size(); ++i)
    impl_->io_thread_states[i]->beat.start(impl_->metrics->of_thread(i), impl_->state);
  // The listener has been listening since construction; the accept loop is queued. (A drain or a stop
  // called before is not undone.)
  impl_->state.advance(server_phase::serving);
  impl_->admin->start();
  if (!impl_->config.source.empty()) {
    impl_->watch = std::make_unique<housekeeping>(
        impl_->config.source, impl_->config.server.watch_config,
        [this] {
          if (!impl_->state.draining()) impl_->reload();
        },
        [this] {
          impl_->close_retired();
          if (impl_->config.server.watch_config) impl_->check_tls_files();
          impl_->check_key_files();
        });
  }
  if (on_started) on_started();
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < impl_->io_thread_states.size(); ++i) {
    threads.emplace_back([this, i] {
      mark_io_thread();
      impl_->io_thread_states[i]->ioc.run();
    });
  }
  mark_io_thread();
  impl_->io_thread_states.front()->ioc.run();
  for (auto& t : threads) t.join();
  // The spans of the last requests go out now, within a bound (a hung collector costs only them).
  if (impl_->tracing) impl_->tracing->shutdown(clock::now() + std::chrono::seconds(2));
}

void server::drain() {
  impl_->drain->begin();
}

void server::stop() {
  impl_->stop();
}

reload_report server::reload() {
  return impl_->reload();
}

}  // namespace gateway
