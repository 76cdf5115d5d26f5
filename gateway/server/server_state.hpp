#pragma once
// What the I/O threads, the acceptor, the drain and the admin probes share across threads: two counts and
// the process's lifecycle flags. Plain atomics; each flag only ever turns from false to true.

#include <atomic>
#include <cstddef>

namespace gateway {

struct server_state {
  std::atomic<std::size_t> inflight{0};     // requests being handled
  std::atomic<std::size_t> connections{0};  // open client connections
  std::atomic<bool> started{false};         // the accept loop is queued: /startupz answers 200
  std::atomic<bool> draining{false};        // drain() was called (first SIGTERM): /readyz answers 503
  std::atomic<bool> closing{false};         // the listener has closed: finish up, keep nothing alive
  std::atomic<bool> stopping{false};        // stop() was called: everything is being cancelled
};

}  // namespace gateway
