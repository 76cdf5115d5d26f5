#include "gateway/server/admin.hpp"

#include "gateway/observe/exposition.hpp"
#include "gateway/server/heartbeat.hpp"
#include "gateway/server/server_state.hpp"
#include "gateway/sql/sql_downstream.hpp"

namespace gateway {
namespace {

constexpr const char* text = "text/plain; charset=utf-8";

admin_reply livez(const admin_sources& from) {
  const auto now = clock::now();
  for (std::size_t i = 0; i < from.heartbeats.size(); ++i) {
    if (!from.state->stopping && now - from.heartbeats[i]->last() > from.stall_threshold)
      return {503, text, "I/O thread " + std::to_string(i) + " is stuck\n"};
  }
  return {200, text, "ok\n"};
}

admin_reply readyz(const admin_sources& from) {
  if (!from.state->started) return {503, text, "starting\n"};
  if (from.state->draining || from.state->stopping) return {503, text, "draining\n"};
  for (const auto* d : from.databases) {
    if (!d->ready()) return {503, text, "database '" + d->name() + "' not connected\n"};
  }
  return {200, text, "ok\n"};
}

}  // namespace

admin_reply answer_admin(std::string_view path, const admin_sources& from) {
  if (path == "/livez") return livez(from);
  if (path == "/startupz")
    return from.state->started ? admin_reply{200, text, "ok\n"} : admin_reply{503, text, "starting\n"};
  if (path == "/readyz") return readyz(from);
  if (path == "/metrics") {
    auto page = render_exposition({.metrics = from.metrics,
                                   .inflight = from.state->inflight.load(std::memory_order_relaxed),
                                   .open_connections = from.state->connections.load(),
                                   .log = from.log,
                                   .databases = &from.databases,
                                   .breakers = &from.breakers,
                                   .http_downstreams = &from.http_downstreams,
                                   .stale_caches = &from.stale_caches,
                                   .certificates = from.certificates});
    return {200, "text/plain; version=0.0.4; charset=utf-8", std::move(page)};
  }
  if (path == "/config") return {200, "application/json", from.config_json};
  return {404, text, "not found; try /livez /readyz /startupz /metrics /config\n"};
}

}  // namespace gateway
