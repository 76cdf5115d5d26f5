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
#include "gateway/observe/process_stats.hpp"
#include "gateway/observe/prometheus.hpp"
#include "gateway/server/admin.hpp"
#include "gateway/server/client_slots.hpp"
#include "gateway/server/request_handler.hpp"
#include "gateway/server/session.hpp"
#include "gateway/sql/postgres_downstream.hpp"
#include "gateway/sql/sqlite_downstream.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>
#include <thread>
#include <utility>

namespace gateway {

namespace net = boost::asio;
using boost::system::error_code;

namespace {

constexpr auto heartbeat_period = std::chrono::milliseconds(100);

struct worker {
  // Each socket is used by its own thread only (see accept_loop): no reactor I/O locks. Other threads
  // still post to it (SQLite results, the hand-off of a connection, stop), so the scheduler keeps its lock.
  net::io_context ioc{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
  net::executor_work_guard<net::io_context::executor_type> guard{ioc.get_executor()};
  session_registry sessions;
  net::steady_timer heartbeat{ioc};
  std::atomic<clock::rep> last_beat{clock::now().time_since_epoch().count()};
};

// An accepted descriptor on its way to its I/O thread: closed if it never gets there (e.g. the thread
// stopped before the hand-off ran).
struct accepted_fd {
  int fd = -1;
  explicit accepted_fd(int f) : fd(f) {}
  accepted_fd(accepted_fd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  accepted_fd(const accepted_fd&) = delete;
  accepted_fd& operator=(const accepted_fd&) = delete;
  accepted_fd& operator=(accepted_fd&&) = delete;
  ~accepted_fd() {
    if (fd >= 0) ::close(fd);
  }
};

// A client's address as the key of its connection count (IPv4 as IPv4-mapped IPv6).
client_slots::address address_key(const sockaddr_storage& peer) {
  client_slots::address a{};
  if (peer.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(peer);
    std::memcpy(a.data(), &in6.sin6_addr, 16);
  } else if (peer.ss_family == AF_INET) {
    const auto& in4 = reinterpret_cast<const sockaddr_in&>(peer);
    a[10] = a[11] = 0xff;
    std::memcpy(a.data() + 12, &in4.sin_addr, 4);
  }
  return a;
}

// The answer to a connection beyond limits.max_connections, written without waiting.
const std::string overloaded_response = [] {
  const std::string body = R"({"error":"overloaded: too many connections"})";
  return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nRetry-After: 1\r\nConnection: close\r\n\r\n" + body;
}();

}  // namespace

struct server::impl {
  gateway_config config;
  std::vector<std::unique_ptr<worker>> workers;
  host_resolver resolver;  // its thread stops after the downstreams that share its addresses
  std::map<std::string, std::unique_ptr<downstream>> downstreams;
  std::vector<const sql_downstream*> sql_downstreams;
  std::unique_ptr<metrics_registry> metrics;
  std::unique_ptr<access_log> log;
  std::unique_ptr<request_handler> handler;
  std::unique_ptr<net::ip::tcp::acceptor> acceptor;
  net::ip::tcp protocol = net::ip::tcp::v4();  // the listener's
  std::unique_ptr<admin_server> admin;
  server_state state;
  client_slots per_client;            // limits.max_connections_per_client
  std::atomic<bool> started{false};   // the listener is accepting
  std::atomic<bool> draining{false};  // SIGTERM received
  std::atomic<bool> stopping{false};
  std::size_t next_worker = 0;
  std::unique_ptr<net::steady_timer> drain_timer;     // worker 0: drain delay, then connection count polls
  std::unique_ptr<net::steady_timer> shutdown_timer;  // worker 0: shutdown.timeout from the signal
  std::string config_json;

  // Worker 0 accepts with accept4 on the listening socket when epoll reports it, every waiting
  // connection each time (the next one raises a new edge). A connection over the limit is answered and
  // closed right there, never registered with any reactor; the others go to the I/O threads in turn, each
  // registering its own socket. No socket is then touched by a thread other than its own, which is what
  // lets the I/O contexts run without reactor I/O locks (BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO).
  void accept_loop(net::yield_context yield) {
    net::steady_timer backoff(yield.get_executor());
    error_code ec;
    acceptor->non_blocking(true, ec);
    while (!stopping && !state.closing && acceptor->is_open()) {
      sockaddr_storage peer{};
      socklen_t peer_size = sizeof peer;
      const int fd = ::accept4(acceptor->native_handle(), reinterpret_cast<sockaddr*>(&peer), &peer_size,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        const int err = errno;
        if (err == EINTR || err == ECONNABORTED || err == EPROTO) continue;  // that client is gone: next
        if (err == EAGAIN || err == EWOULDBLOCK) {
          acceptor->async_wait(net::socket_base::wait_read, yield[ec]);
        } else {
          spdlog::warn("accept failed: {}", std::strerror(err));
          backoff.expires_after(milliseconds(50));  // e.g. out of file descriptors: don't spin
          backoff.async_wait(yield[ec]);
        }
        if (ec == net::error::operation_aborted) return;  // the listener closed
        continue;
      }
      if (stopping || state.closing) {
        ::close(fd);
        return;
      }
      if (state.connections.load(std::memory_order_relaxed) >= config.limits.max_connections) {
        refuse(fd, shed_reason::max_connections);
        continue;
      }
      const auto client = address_key(peer);
      if (!per_client.take(client)) {
        refuse(fd, shed_reason::max_connections_per_client);
        continue;
      }
      state.connections.fetch_add(1, std::memory_order_relaxed);
      const std::size_t index = next_worker;
      next_worker = (next_worker + 1) % workers.size();
      try {
        spawn_session(index, fd, client);
      } catch (const std::exception& e) {
        // No memory or no stack mapping for one more connection: that client is refused, the gateway
        // goes on (its descriptor was closed with the coroutine's function object).
        state.connections.fetch_sub(1, std::memory_order_relaxed);
        per_client.give(client);
        spdlog::warn("cannot start a connection: {}", e.what());
        metrics->worker(0).shed(shed_reason::max_connections);
      }
      // Let what is queued on this thread run before the next accept, as one accept per wake-up would:
      // taking a whole backlog at once starts every new client's downstream connects in one burst, and a
      // downstream's SYN backlog overflows sooner (connects then wait for the SYN to be sent again).
      net::post(yield);
    }
  }

  // A connection refused at the door: a 503 written without waiting, then closed; never registered with
  // any reactor.
  void refuse(int fd, shed_reason why) {
    metrics->worker(0).shed(why);
    [[maybe_unused]] const auto sent =
        ::send(fd, overloaded_response.data(), overloaded_response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
  }

  // The connection's coroutine on I/O thread `index`. Throws when it cannot be started (the descriptor
  // is closed then).
  void spawn_session(std::size_t index, int fd, const client_slots::address& client) {
    net::spawn(
        workers[index]->ioc.get_executor(), std::allocator_arg, stack_cache(config.server.stack_bytes()),
        [this, index, client, owned = accepted_fd(fd)](net::yield_context session_yield) mutable {
          struct slot_release {  // gives the client's slot back however the connection ends
            client_slots& slots;
            const client_slots::address& address;
            ~slot_release() { slots.give(address); }
          } release{per_client, client};
          session_context ctx{
              handler.get(), &config, &workers[index]->sessions, &state, &metrics->worker(index),
              log.get(),     index};
          net::ip::tcp::socket socket(workers[index]->ioc);
          error_code assign_ec;
          socket.assign(protocol, owned.fd, assign_ec);
          if (assign_ec) {
            spdlog::warn("cannot register an accepted connection: {}", assign_ec.message());
            state.connections.fetch_sub(1, std::memory_order_relaxed);
            return;  // `owned` closes it
          }
          owned.fd = -1;  // the socket owns it now
          run_session(std::move(socket), ctx, session_yield);
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

  // Every I/O thread notes the time every 100 ms and how late its timer fired: a thread that stops
  // noting is stuck (/livez), a late timer means something blocked it (the lag histogram).
  void start_heartbeat(std::size_t index) {
    auto& w = *workers[index];
    net::spawn(
        w.ioc,
        [this, &w, index](net::yield_context yield) {
          while (!stopping) {
            const auto due = clock::now() + heartbeat_period;
            w.heartbeat.expires_at(due);
            error_code ec;
            w.heartbeat.async_wait(yield[ec]);
            if (stopping) break;
            const auto now = clock::now();
            metrics->worker(index).loop_lag(now - due);
            w.last_beat.store(now.time_since_epoch().count(), std::memory_order_relaxed);
          }
        },
        [](std::exception_ptr) {});
  }

  // Step 2 of the drain, on worker 0: no new connections, no new requests on kept-alive ones.
  void close_listener(server& owner) {
    state.closing = true;
    error_code ignored;
    acceptor->close(ignored);
    for (auto& w : workers) net::post(w->ioc, [&w = *w] { w.sessions.close_idle(); });
    spdlog::info("drain: listener closed; {} connections, {} requests in flight", state.connections.load(),
                 state.inflight.load());
    wait_for_connections(owner);
  }

  void wait_for_connections(server& owner) {
    if (state.connections.load() == 0) {
      spdlog::info("drain: all connections closed");
      owner.stop();
      return;
    }
    drain_timer->expires_after(milliseconds(20));
    drain_timer->async_wait([this, &owner](error_code ec) {
      if (!ec && !stopping) wait_for_connections(owner);
    });
  }

  admin_reply answer_admin(std::string_view path) {
    if (path == "/livez") {
      const auto now = clock::now();
      for (std::size_t i = 0; i < workers.size(); ++i) {
        const auto last =
            clock::time_point(clock::duration(workers[i]->last_beat.load(std::memory_order_relaxed)));
        if (!stopping && now - last > config.admin.stall_threshold)
          return {503, "text/plain; charset=utf-8", "I/O thread " + std::to_string(i) + " is stuck\n"};
      }
      return {200, "text/plain; charset=utf-8", "ok\n"};
    }
    if (path == "/startupz") {
      if (!started) return {503, "text/plain; charset=utf-8", "starting\n"};
      return {200, "text/plain; charset=utf-8", "ok\n"};
    }
    if (path == "/readyz") {
      if (!started) return {503, "text/plain; charset=utf-8", "starting\n"};
      if (draining || stopping) return {503, "text/plain; charset=utf-8", "draining\n"};
      for (const auto* d : sql_downstreams) {
        if (!d->ready())
          return {503, "text/plain; charset=utf-8", "database '" + d->name() + "' not connected\n"};
      }
      return {200, "text/plain; charset=utf-8", "ok\n"};
    }
    if (path == "/metrics") return {200, "text/plain; version=0.0.4; charset=utf-8", render_metrics()};
    if (path == "/config") return {200, "application/json", config_json};
    return {404, "text/plain; charset=utf-8", "not found; try /livez /readyz /startupz /metrics /config\n"};
  }

  std::string render_metrics() {
    prometheus_writer out;
    metrics->render(out, state.inflight.load(std::memory_order_relaxed));
    out.family("gateway_buffered_bytes", "gauge",
               "Bytes of downstream answers buffered, counted against the memory budget.");
    out.sample("gateway_buffered_bytes", {}, static_cast<double>(memory_budget::used()));
    out.family("gateway_memory_budget_bytes", "gauge",
               "The memory budget for buffered answers (limits.memory_budget, or derived).");
    out.sample("gateway_memory_budget_bytes", {}, static_cast<double>(memory_budget::limit()));
    out.family("gateway_open_connections", "gauge", "Open client connections on the public listener.");
    out.sample("gateway_open_connections", {}, static_cast<double>(state.connections.load()));
    if (log) {
      out.family("gateway_access_log_dropped_total", "counter",
                 "Access log lines dropped because stdout was full, slow or failing.");
      out.sample("gateway_access_log_dropped_total", {}, static_cast<double>(log->dropped()));
    }
    render_sql(out);
    const auto p = read_process_stats();
    out.family("process_cpu_seconds_total", "counter", "User and system CPU time spent, in seconds.");
    out.sample("process_cpu_seconds_total", {}, p.cpu_seconds);
    out.family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    out.sample("process_resident_memory_bytes", {}, static_cast<double>(p.resident_bytes));
    out.family("process_open_fds", "gauge", "Open file descriptors.");
    out.sample("process_open_fds", {}, static_cast<double>(p.open_fds));
    out.family("process_max_fds", "gauge", "Limit on open file descriptors.");
    out.sample("process_max_fds", {}, static_cast<double>(p.max_fds));
    out.family("process_start_time_seconds", "gauge",
               "Start time of the process since the Unix epoch, in seconds.");
    out.sample("process_start_time_seconds", {}, p.start_time_seconds);
    out.family("gateway_build_info", "gauge", "Always 1; the labels tell the build.");
    out.sample("gateway_build_info", {{"version", GATEWAY_VERSION}}, 1);
    return out.take();
  }

  void render_sql(prometheus_writer& out) {
    if (sql_downstreams.empty()) return;
    out.family("gateway_db_semaphore_permits_available", "gauge", "Free permits of the database semaphore.");
    for (const auto* d : sql_downstreams)
      out.sample("gateway_db_semaphore_permits_available", {{"downstream", d->name()}},
                 static_cast<double>(d->semaphore().available()));
    out.family("gateway_db_semaphore_waiting", "gauge", "Calls queued for a database permit.");
    for (const auto* d : sql_downstreams)
      out.sample("gateway_db_semaphore_waiting", {{"downstream", d->name()}},
                 static_cast<double>(d->semaphore().waiting()));
    out.family("gateway_db_semaphore_wait_seconds", "histogram",
               "Time calls spent queued for a database permit.");
    for (const auto* d : sql_downstreams)
      out.histogram_sample("gateway_db_semaphore_wait_seconds", {{"downstream", d->name()}},
                           d->semaphore().wait_time().read());
    out.family("gateway_db_pool_connections", "gauge", "Database connections by state.");
    for (const auto* d : sql_downstreams) {
      const auto c = d->pool_counts();
      out.sample("gateway_db_pool_connections", {{"downstream", d->name()}, {"state", "idle"}},
                 static_cast<double>(c.idle));
      out.sample("gateway_db_pool_connections", {{"downstream", d->name()}, {"state", "in_use"}},
                 static_cast<double>(c.in_use));
      out.sample("gateway_db_pool_connections", {{"downstream", d->name()}, {"state", "broken"}},
                 static_cast<double>(c.broken));
    }
    out.family("gateway_db_queries_total", "counter", "Database calls by outcome.");
    for (const auto* d : sql_downstreams) {
      for (auto outcome : {call_outcome::ok, call_outcome::timeout, call_outcome::error,
                           call_outcome::cancelled, call_outcome::rejected}) {
        out.sample("gateway_db_queries_total", {{"downstream", d->name()}, {"outcome", to_string(outcome)}},
                   static_cast<double>(d->stats().queries[static_cast<std::size_t>(outcome)].load()));
      }
    }
    out.family("gateway_db_cancellations_total", "counter",
               "Queries cancelled on the server or interrupted at their deadline.");
    for (const auto* d : sql_downstreams)
      out.sample("gateway_db_cancellations_total", {{"downstream", d->name()}},
                 static_cast<double>(d->stats().server_cancels.load()));
  }
};

server::server(const gateway_config& config) : impl_(std::make_unique<impl>()) {
  impl_->config = config;
  const auto& cfg = impl_->config;
  stack_cache::set_max_cached_per_thread(cfg.server.stack_cache);
  impl_->per_client.set_cap(cfg.limits.max_connections_per_client);
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
  impl_->config_json = effective_config_json(cfg).dump(2) + "\n";

  for (const auto& d : cfg.downstreams) {
    auto& slot = impl_->downstreams[d.name];
    if (d.kind == downstream_kind::http) {
      slot = std::make_unique<http_downstream>(d, iocs, impl_->resolver);
      continue;
    }
    std::unique_ptr<sql_downstream> sql;
    if (d.sql.driver == sql_driver::sqlite) {
      sql = std::make_unique<sqlite_downstream>(d);
    } else {
      sql = std::make_unique<postgres_downstream>(d);
    }
    impl_->sql_downstreams.push_back(sql.get());
    slot = std::move(sql);
  }

  // Names resolve in the background; give them a moment so that the first requests find them.
  impl_->resolver.start(std::chrono::seconds(2));

  std::vector<std::vector<downstream*>> targets;
  for (const auto& route : cfg.routes) {
    auto& row = targets.emplace_back();
    for (const auto& call : route.calls) row.push_back(impl_->downstreams.at(call.downstream).get());
  }
  impl_->handler = std::make_unique<request_handler>(cfg, std::move(targets), *impl_->metrics);

  auto& ioc = impl_->workers.front()->ioc;
  impl_->drain_timer = std::make_unique<net::steady_timer>(ioc);
  impl_->shutdown_timer = std::make_unique<net::steady_timer>(ioc);
  error_code ec;
  const auto address = net::ip::make_address(cfg.server.listen.host, ec);
  if (ec) throw std::runtime_error("server.listen: invalid address '" + cfg.server.listen.host + "'");
  const net::ip::tcp::endpoint endpoint(address, cfg.server.listen.port);
  impl_->acceptor = std::make_unique<net::ip::tcp::acceptor>(ioc);
  impl_->protocol = endpoint.protocol();
  impl_->acceptor->open(endpoint.protocol());
  impl_->acceptor->set_option(net::socket_base::reuse_address(true));
  impl_->acceptor->bind(endpoint, ec);
  if (ec)
    throw std::runtime_error("cannot listen on " + cfg.server.listen.host + ":" +
                             std::to_string(cfg.server.listen.port) + ": " + ec.message());
  impl_->acceptor->listen(net::socket_base::max_listen_connections);
  impl_->admin = std::make_unique<admin_server>(
      cfg.admin.listen, [this](std::string_view path) { return impl_->answer_admin(path); });
}

server::~server() {
  impl_->admin.reset();  // its thread reads the rest
}

net::ip::tcp::endpoint server::local_endpoint() const {
  return impl_->acceptor->local_endpoint();
}

net::ip::tcp::endpoint server::admin_endpoint() const {
  return impl_->admin->local_endpoint();
}

std::size_t server::threads() const {
  return impl_->workers.size();
}

void server::run(const std::function<void()>& on_started) {
  net::spawn(
      impl_->workers.front()->ioc, [this](net::yield_context yield) { impl_->accept_loop(yield); },
      [](std::exception_ptr e) {
        // The accept loop ends only on stop() or drain; an exception here is a bug, and a gateway that no
        // longer accepts must die loudly (so that it is restarted) rather than linger.
        if (e) std::rethrow_exception(e);
      });
  for (std::size_t i = 0; i < impl_->workers.size(); ++i) impl_->start_heartbeat(i);
  impl_->started = true;  // the listener has been listening since construction; the accept loop is queued
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
  if (impl_->draining.exchange(true) || impl_->stopping) return;
  const auto& s = impl_->config.shutdown;
  spdlog::info(
      "drain: not ready; serving for {} more, then closing the listener (cancelling what is left after {})",
      format_duration(s.drain_delay), format_duration(s.timeout));
  auto& ioc = impl_->workers.front()->ioc;
  net::post(ioc, [this, s] {
    // The shutdown timeout counts from the signal; it cancels whatever is still running.
    impl_->shutdown_timer->expires_after(s.timeout);
    impl_->shutdown_timer->async_wait([this](error_code ec) {
      if (ec || impl_->stopping) return;
      spdlog::warn("drain: shutdown timeout; cancelling {} requests still in flight",
                   impl_->state.inflight.load());
      stop();
    });
    impl_->drain_timer->expires_after(s.drain_delay);
    impl_->drain_timer->async_wait([this](error_code ec) {
      if (!ec && !impl_->stopping) impl_->close_listener(*this);
    });
  });
}

void server::stop() {
  if (impl_->stopping.exchange(true)) return;
  impl_->admin->stop();
  net::post(impl_->workers.front()->ioc, [this] {
    error_code ignored;
    impl_->acceptor->close(ignored);
    impl_->drain_timer->cancel();
    impl_->shutdown_timer->cancel();
  });
  for (std::size_t i = 0; i < impl_->workers.size(); ++i) {
    auto& w = *impl_->workers[i];
    net::post(w.ioc, [this, &w, i] {
      w.heartbeat.cancel();
      w.sessions.close_all();
      for (auto& [name, d] : impl_->downstreams) d->close_idle(i);
      w.guard.reset();
    });
  }
}

}  // namespace gateway
