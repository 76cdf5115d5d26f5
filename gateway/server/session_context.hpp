#pragma once
// What a connection's coroutine uses besides its socket: all of it outlives the connection (owned by the
// server, or by the connection's I/O thread), but for the generations the connection holds a share of.

#include "gateway/config/config.hpp"
#include "gateway/observe/logging.hpp"
#include "gateway/observe/metrics.hpp"
#include "gateway/server/config_generation.hpp"
#include "gateway/server/request_handler.hpp"
#include "gateway/server/server_state.hpp"
#include "gateway/server/session_registry.hpp"

#include <atomic>
#include <cstddef>
#include <memory>

namespace gateway {

class certificate_reloader;
class tracer;

struct session_context {
  // The current configuration generation (the server's, see config_generation.hpp): a request takes it
  // when its head has been read and keeps it to its end.
  const std::atomic<std::shared_ptr<const config_generation>>* generation = nullptr;
  // The configuration the process started with: its server, limits and other sections that only a restart
  // changes (every generation carries the same ones).
  const gateway_config* config = nullptr;
  session_registry* registry = nullptr;  // the connection's I/O thread's
  server_state* state = nullptr;
  thread_metrics* metrics = nullptr;    // the connection's I/O thread's
  access_log* log = nullptr;            // null when access logging is off
  std::size_t thread_index = 0;         // the index of the connection's I/O thread
  certificate_reloader* tls = nullptr;  // the listener's TLS (server.tls); null: plain TCP
  tracer* tracing = nullptr;            // null when tracing is off
};

}  // namespace gateway
