#include "gateway/server/admin.hpp"

#include "gateway/observe/exposition.hpp"
#include "gateway/server/config_generation.hpp"
#include "gateway/server/heartbeat.hpp"
#include "gateway/server/server_state.hpp"
#include "gateway/server/status_page.hpp"
#include "gateway/sql/sql_downstream.hpp"

#include <nlohmann/json.hpp>

#include <optional>

namespace gateway {
namespace {

constexpr const char* text = "text/plain; charset=utf-8";

admin_reply livez(const admin_sources& from) {
  const auto now = clock::now();
  for (std::size_t i = 0; i < from.heartbeats.size(); ++i) {
    if (!from.state->stopping() && now - from.heartbeats[i]->last() > from.stall_threshold)
      return {503, text, "I/O thread " + std::to_string(i) + " is stuck\n"};
  }
  return {200, text, "ok\n"};
}

admin_reply readyz(const admin_sources& from, const config_generation& current) {
  if (!from.state->started()) return {503, text, "starting\n"};
  if (from.state->draining()) return {503, text, "draining\n"};  // or stopping
  for (const auto* d : current.databases) {
    if (!d->ready()) return {503, text, "database '" + d->name() + "' not connected\n"};
  }
  return {200, text, "ok\n"};
}

// The token, compared in time independent of where the first difference is.
bool token_matches(std::string_view authorization, const std::string& token) {
  constexpr std::string_view scheme = "Bearer ";
  if (token.empty() || authorization.size() != scheme.size() + token.size() ||
      authorization.substr(0, scheme.size()) != scheme)
    return false;
  unsigned char differ = 0;
  for (std::size_t i = 0; i < token.size(); ++i)
    differ |= static_cast<unsigned char>(authorization[scheme.size() + i] ^ token[i]);
  return differ == 0;
}

bool is_probe(std::string_view path) {
  return path == "/livez" || path == "/readyz" || path == "/startupz";
}

// With admin.require_token: 401 without an Authorization field, 403 with a wrong one; nullopt: go on.
std::optional<admin_reply> refused_without_token(const admin_request& request, const admin_sources& from) {
  if (!from.require_token || is_probe(request.path) || token_matches(request.authorization, from.token))
    return std::nullopt;
  if (request.authorization.empty()) {
    admin_reply reply{401, text, "this path needs Authorization: Bearer <admin.token>\n"};
    reply.fields = "WWW-Authenticate: Bearer realm=\"gateway admin\"\r\n";
    return reply;
  }
  return admin_reply{403, text, "wrong admin token\n"};
}

admin_reply reload(const admin_request& request, const admin_sources& from) {
  if (request.method != "POST") return {405, text, "method not allowed: POST /reload\n", "POST"};
  if (!request.loopback && !token_matches(request.authorization, from.token)) {
    return {403, text,
            from.token.empty()
                ? "POST /reload is only taken from a loopback address (or with admin.token)\n"
                : "POST /reload needs Authorization: Bearer <admin.token> from this address\n"};
  }
  const auto report = from.reload();
  return {report.errors.empty() ? 200u : 422u, "application/json", reload_report_json(report)};
}

admin_reply answer_path(const admin_request& request, const admin_sources& from,
                        const config_generation& current) {
  const auto path = request.path;
  if (auto refused = refused_without_token(request, from)) return std::move(*refused);
  if (path == "/reload") return reload(request, from);
  if (request.method != "GET") return {405, text, "method not allowed\n", "GET, HEAD"};
  if (path == "/livez") return livez(from);
  if (path == "/startupz")
    return from.state->started() ? admin_reply{200, text, "ok\n"} : admin_reply{503, text, "starting\n"};
  if (path == "/readyz") return readyz(from, current);
  if (path == "/metrics") {
    const auto* reloads = from.reloads;
    const auto admin = from.listener ? from.listener->connection_counts() : admin_connection_counts{};
    auto page = render_exposition({.metrics = from.metrics,
                                   .inflight = from.state->inflight.load(std::memory_order_relaxed),
                                   .open_connections = from.state->connections.load(),
                                   .admin_connections = admin.open,
                                   .admin_evicted_for_client = admin.evicted_for_client,
                                   .admin_evicted_for_total = admin.evicted_for_total,
                                   .admin_timed_out = admin.timed_out,
                                   .log = from.log,
                                   .databases = &current.databases,
                                   .breakers = &current.breakers,
                                   .http_downstreams = &current.http_downstreams,
                                   .answer_caches = &current.answer_caches,
                                   .certificates = from.certificates,
                                   .tracing = from.tracing,
                                   .config_version = current.version,
                                   .reloads_succeeded = reloads->succeeded.load(),
                                   .reloads_failed = reloads->failed.load(),
                                   .last_reload_success = reloads->last_success.load(),
                                   .restart_pending = !current.restart_pending.empty()});
    return {200, "text/plain; version=0.0.4; charset=utf-8", std::move(page)};
  }
  if (path == "/config") return {200, "application/json", current.config_json};
  if (path == "/status.json") return {200, "application/json", status_json(from, current)};
  if (path == "/") return {200, "text/html; charset=utf-8", std::string(status_page_html())};
  return {404, text,
          "not found; try / /status.json /livez /readyz /startupz /metrics /config, POST /reload\n"};
}

}  // namespace

admin_reply answer_admin(const admin_request& request, const admin_sources& from) {
  const auto current = from.generation();
  auto reply = answer_path(request, from, *current);
  // After a reload, the version it left running.
  const auto& version = request.path == "/reload" ? from.generation()->version : current->version;
  reply.fields += "X-Config-Version: " + version + "\r\n";
  return reply;
}

std::string reload_report_json(const reload_report& report) {
  nlohmann::json j;
  j["applied"] = report.applied;
  j["unchanged"] = report.unchanged;
  j["version"] = report.version;
  j["errors"] = report.errors;
  j["restart_required"] = report.restart_required;
  return j.dump(2) + "\n";
}

}  // namespace gateway
