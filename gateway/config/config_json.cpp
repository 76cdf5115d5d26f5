#include "gateway/config/config_json.hpp"

#include "gateway/config/config_values.hpp"

#include <cstdio>

namespace gateway {

std::string format_listen(const listen_address& a) {
  return (a.host.find(':') != std::string::npos ? "[" + a.host + "]" : a.host) + ":" + std::to_string(a.port);
}

namespace {

nlohmann::json downstream_json(const downstream_settings& d) {
  nlohmann::json j;
  if (d.kind == downstream_kind::http) {
    j["kind"] = "http";
    j["url"] = d.url;
    j["max_connections"] = d.max_connections;
    j["max_connecting"] = d.max_connecting;
    j["idle_timeout"] = format_duration(d.idle_timeout);
    j["dns_refresh"] = format_duration(d.dns_refresh);
    if (!d.endpoints.empty()) {
      j["endpoints"] = nlohmann::json::array();
      for (const auto& e : d.endpoints) j["endpoints"].push_back(format_listen({e.host, e.port}));
    }
    if (d.tls.enabled) {  // file paths only: a key's contents are never read here
      const auto& t = d.tls;
      j["tls"] = {{"verify", t.verify},
                  {"ca_file", t.ca_file},
                  {"server_name", t.server_name},
                  {"cert_file", t.cert_file},
                  {"key_file", t.key_file}};
    }
    j["coalesce"] = d.coalesce;
    j["cache"] = d.stale.cache;
    j["compressed"] = d.compressed;
    j["outlier_ejection"] = {{"consecutive_failures", d.ejection.consecutive_failures},
                             {"base_time", format_duration(d.ejection.base_time)},
                             {"max_time", format_duration(d.ejection.max_time)},
                             {"max_percent", d.ejection.max_percent}};
    j["retry"] = {{"attempts", d.retry.attempts},
                  {"on_status", d.retry.on_status},
                  {"on_reset", d.retry.on_reset},
                  {"backoff", format_duration(d.retry.backoff)},
                  {"max_backoff", format_duration(d.retry.max_backoff)},
                  {"budget_percent", d.retry.budget_percent},
                  {"budget_min", d.retry.budget_min}};
    const auto& h = d.hedge;
    j["hedge"] = {
        {"enabled", h.enabled},
        {"delay", h.delay.count() > 0 ? format_duration(h.delay) : "p" + std::to_string(h.percentile)},
        {"min_delay", format_duration(h.min_delay)},
        {"max_delay", format_duration(h.max_delay)},
        {"budget_percent", h.budget_percent}};
  } else {
    const auto& sql = d.sql;
    j["kind"] = "sql";
    if (sql.driver == sql_driver::sqlite) {
      j["driver"] = "sqlite";
      j["database"] = sql.database;
      j["read_only"] = sql.read_only;
    } else {
      j["driver"] = "postgres";
      j["dsn"] = redacted;  // may hold a password, whether or not it came from ${ENV}
    }
    j["pool_size"] = sql.pool_size;
    j["permits"] = sql.effective_permits();
    j["max_waiting"] = sql.max_waiting;
    j["query"] = sql.query;
  }
  j["connect_timeout"] = format_duration(d.connect_timeout);
  j["max_response_bytes"] = d.max_response_bytes;
  if (d.stale.enabled) {
    j["stale_if_error"] = {{"max_stale", format_duration(d.stale.max_stale)},
                           {"max_bytes", d.stale.max_bytes}};
  }
  const auto& b = d.breaker;
  j["circuit_breaker"] = {{"enabled", b.enabled},
                          {"per_endpoint", b.per_endpoint},
                          {"window", format_duration(b.window)},
                          {"min_calls", b.min_calls},
                          {"failure_percent", b.failure_percent},
                          {"consecutive_failures", b.consecutive_failures},
                          {"cooldown", format_duration(b.cooldown)},
                          {"half_open_calls", b.half_open_calls}};
  auto& failures = j["circuit_breaker"]["failures"] = nlohmann::json::array();
  for (const auto& [name, bit] : failure_kind_names) {
    if ((b.failures.kinds & bit) != 0) failures.push_back(name);
  }
  for (const auto status : b.failures.statuses) failures.push_back(std::to_string(status));
  return j;
}

// A header policy, with secret values shown as "<redacted>".
nlohmann::json headers_json(const header_policy& h) {
  nlohmann::json j = nlohmann::json::object();
  if (!h.forward.empty()) j["forward"] = h.forward;
  if (!h.set.empty()) {
    j["set"] = nlohmann::json::object();
    for (const auto& f : h.set) j["set"][f.name] = f.secret ? "<redacted>" : f.value;
  }
  if (!h.remove.empty()) j["remove"] = h.remove;
  return j;
}

nlohmann::json response_headers_json(const response_header_policy& h) {
  nlohmann::json j = nlohmann::json::object();
  if (!h.forward.empty()) j["forward"] = h.forward;
  if (!h.set_cookie.empty()) j["set_cookie"] = h.set_cookie;
  if (h.cache_control) j["cache_control"] = true;
  return j;
}

std::string path_text(const json_path& path) {
  std::string text;
  for (const auto& step : path.steps) text += (text.empty() ? "" : ".") + step;
  return text;
}

void add_shaping(const call_shaping& s, nlohmann::json& j) {
  if (s.target) j["target"] = path_text(*s.target);
  if (!s.omit.empty()) j["omit"] = s.omit;
  for (const auto& [from, to] : s.rename) j["rename"][from] = to;
  if (!s.group.empty()) j["group"] = s.group;
  if (s.flatten) j["flatten"] = true;
}

// A call's composition keys as written (a `set` value taking answers' values among its headers' `set`).
void add_composition(const call_settings& c, nlohmann::json& j) {
  if (!c.after.empty()) j["after"] = c.after;
  if (c.for_each) {
    j["for_each"] = "{" + c.for_each->source.text + "}";
    j["max_items"] = c.for_each->max_items;
    j["concurrency"] = c.for_each->concurrency;
  }
  if (c.when) j["when"] = "{" + c.when->field.text + "}";  // a parameter's name or a reference
  for (const auto& t : c.header_templates) {
    std::string value;
    for (const auto& [is_ref, text] : t.pieces) value += is_ref ? "{" + text + "}" : text;
    j["headers"]["set"][t.name] = value;
  }
  add_shaping(c.shaping, j);
}

nlohmann::json credential_json(const credential_source& c) {
  if (c.from == credential_source::kind::cookie) return {{"cookie", c.name}};
  return {{"header", c.name}};
}

// A route's auth and rate limits (config/edge_settings.hpp); keys files are named, never shown.
void add_edge(const route_settings& r, nlohmann::json& j) {
  if (r.auth && r.auth->jwt) {
    const auto& a = *r.auth->jwt;
    nlohmann::json jwt{{"algorithms", a.algorithms},
                       {"issuers", a.issuers},
                       {"audiences", a.audiences},
                       {"leeway", format_duration(a.leeway)},
                       {"required_claims", a.required_claims},
                       {"token", credential_json(a.token)},
                       {"forward_token", a.forward_token}};
    if (!a.jwks_file.empty()) jwt["jwks_file"] = a.jwks_file;
    if (!a.jwks_url.empty()) {
      jwt["jwks_url"] = a.jwks_url;
      jwt["jwks_tls"] = {{"verify", a.jwks_tls.verify},
                         {"ca_file", a.jwks_tls.ca_file},
                         {"server_name", a.jwks_tls.server_name}};
      jwt["refresh"] = format_duration(a.refresh);
      jwt["min_refresh"] = format_duration(a.min_refresh);
      jwt["start_wait"] = format_duration(a.start_wait);
      jwt["fetch_timeout"] = format_duration(a.fetch_timeout);
    }
    jwt["claim_values"] = nlohmann::json::object();
    for (const auto& [claim, values] : a.claim_values) jwt["claim_values"][claim] = values;
    jwt["forward_claims"] = nlohmann::json::object();
    for (const auto& [claim, field] : a.forward_claims) jwt["forward_claims"][claim] = field;
    j["auth"]["jwt"] = std::move(jwt);
  }
  if (r.auth && r.auth->api_key) {
    const auto& a = *r.auth->api_key;
    j["auth"]["api_key"] = {{"header", a.key.name}, {"keys_file", a.keys_file}};
    if (!a.forward_as.empty()) j["auth"]["api_key"]["forward_as"] = a.forward_as;
  }
  if (r.rate_limits.empty()) return;
  j["rate_limit"] = nlohmann::json::array();
  for (const auto& l : r.rate_limits) {
    std::string key(rate_limit_settings::key_labels[static_cast<std::size_t>(l.key)]);
    if (l.key == rate_limit_settings::key_kind::header) key = "header:" + l.key_name;
    if (l.key == rate_limit_settings::key_kind::claim) key = "jwt." + l.key_name;
    char rate[32];
    std::snprintf(rate, sizeof rate, "%g", l.rate);
    j["rate_limit"].push_back({{"name", l.name},
                               {"key", key},
                               {"rate", std::string(rate) + "/" + format_duration(l.period)},
                               {"burst", l.bucket()},
                               {"backend", l.redis ? "redis" : "local"},
                               {"max_keys", l.max_keys}});
  }
}

nlohmann::json route_json(const route_settings& r) {
  nlohmann::json j;
  j["path"] = r.path;
  j["method"] = r.method;
  if (r.pattern.type() == route_pattern::kind::prefix) j["path_prefix"] = true;
  if (!r.headers.empty()) j["headers"] = headers_json(r.headers);
  add_edge(r, j);
  if (const auto* p = r.proxy()) {
    j["proxy"] = {{"downstream", p->downstream},
                  {"timeout", format_duration(p->timeout)},
                  {"idle_timeout", format_duration(p->idle_timeout)},
                  {"max_body_bytes", p->max_body_bytes},
                  {"buffer_bytes", p->buffer_bytes}};
    if (p->rewrite) j["proxy"]["rewrite"] = *p->rewrite;
    if (p->connect_timeout.count() > 0) j["proxy"]["connect_timeout"] = format_duration(p->connect_timeout);
    return j;
  }
  const auto& a = *r.aggregate();
  j["deadline"] = format_duration(a.deadline);
  j["response"] = a.response == response_shape::array ? "array" : "object";
  if (!a.degraded_reason_field.empty()) j["degraded_reason_field"] = a.degraded_reason_field;
  add_shaping(a.shaping, j);
  if (!a.response_headers.empty()) j["response_headers"] = response_headers_json(a.response_headers);
  if (a.cors) {
    j["cors"] = {
        {"allow_origins", a.cors->allow_origins},         {"allow_methods", a.cors->allow_methods},
        {"allow_headers", a.cors->allow_headers},         {"expose_headers", a.cors->expose_headers},
        {"allow_credentials", a.cors->allow_credentials}, {"max_age", format_duration(a.cors->max_age)}};
  }
  j["params"] = nlohmann::json::object();
  for (const auto& p : a.params) {
    if (p.from_identity) continue;  // "{jwt.claim}": the token's, shown in the call's path
    nlohmann::json param{{"required", p.required}};
    if (p.in_path) param["in_path"] = true;
    if (!p.pattern.empty()) param["pattern"] = p.pattern;
    j["params"][p.name] = std::move(param);
  }
  j["calls"] = nlohmann::json::array();
  for (const auto& c : a.calls) {
    nlohmann::json call{{"name", c.name}, {"downstream", c.downstream}, {"required", c.required}};
    if (!c.path.pieces().empty()) {
      std::string path;
      for (const auto& piece : c.path.pieces())
        path += piece.is_param ? "{" + piece.text + (piece.segments ? "*}" : "}") : piece.text;
      call["path"] = path;
    }
    if (c.method != "GET") call["method"] = c.method;
    if (c.body == call_body::client) call["body"] = "client";
    if (c.body == call_body::built) call["body_template"] = nlohmann::json::parse(c.built_body.text());
    if (!c.idempotent) call["idempotent"] = false;
    if (c.timeout) call["timeout"] = format_duration(*c.timeout);
    if (!c.fields.empty()) call["fields"] = c.fields;
    if (!c.effective_headers.empty()) call["headers"] = headers_json(c.effective_headers);
    if (!c.effective_response_headers.empty())
      call["response_headers"] = response_headers_json(c.effective_response_headers);
    if (!c.pass.empty()) {
      call["pass_status"] = c.pass.statuses;
      auto names = c.pass.fields.forward;
      if (c.pass.fields.cache_control) names.emplace_back("Cache-Control");
      if (!names.empty()) call["pass_headers"] = std::move(names);
    }
    call["fallback"] = nlohmann::json::parse("{" + c.fallback_members + "}");
    add_composition(c, call);
    j["calls"].push_back(std::move(call));
  }
  return j;
}

}  // namespace

namespace {

// Every string holding a value taken from a credential's environment variable becomes "<redacted>".
void redact_secrets(nlohmann::json& j, const std::vector<std::string>& secrets) {
  if (secrets.empty()) return;
  if (j.is_string()) {
    const auto& text = j.get_ref<const std::string&>();
    for (const auto& secret : secrets) {
      if (text.find(secret) != std::string::npos) {
        j = "<redacted>";
        return;
      }
    }
  } else if (j.is_structured()) {
    for (auto& item : j) redact_secrets(item, secrets);
  }
}

}  // namespace

nlohmann::json effective_config_json(const gateway_config& c) {
  nlohmann::json j;
  j["source"] = c.source;
  j["server"] = {{"listen", format_listen(c.server.listen)},
                 {"threads", c.server.threads},
                 {"reuse_port", c.server.reuse_port},
                 {"watch_config", c.server.watch_config},
                 {"coroutine_stack", c.server.coroutine_stack},
                 {"forwarded", c.server.forwarded == forwarded_style::x_forwarded ? "x-forwarded"
                               : c.server.forwarded == forwarded_style::forwarded ? "forwarded"
                                                                                  : "none"},
                 {"error_detail", c.server.errors == error_detail::full ? "full" : "reason"},
                 {"compression",
                  {{"enabled", c.server.compression.enabled},
                   {"min_bytes", c.server.compression.min_bytes},
                   {"max_bytes", c.server.compression.max_bytes},
                   {"level", c.server.compression.level}}}};
  if (c.server.tls.enabled) {  // file paths only: a key's contents are never read here
    const auto& t = c.server.tls;
    j["server"]["tls"] = {{"cert_file", t.cert_file},
                          {"key_file", t.key_file},
                          {"min_version", t.min_tls13 ? "1.3" : "1.2"},
                          {"ciphers", t.ciphers},
                          {"reload_interval", format_duration(t.reload_interval)}};
  }
  j["server"]["trusted_proxies"] = nlohmann::json::array();
  for (const auto& n : c.server.trusted_proxies) j["server"]["trusted_proxies"].push_back(n.text());
  j["admin"] = {{"listen", format_listen(c.admin.listen)},
                {"stall_threshold", format_duration(c.admin.stall_threshold)},
                {"require_token", c.admin.require_token},
                {"max_connections", c.admin.max_connections},
                {"max_connections_per_client", c.admin.max_connections_per_client},
                {"header_timeout", format_duration(c.admin.header_timeout)},
                {"idle_timeout", format_duration(c.admin.idle_timeout)}};
  if (!c.admin.token.empty()) j["admin"]["token"] = "<redacted>";
  j["limits"] = {{"max_connections", c.limits.max_connections},
                 {"max_connections_per_client", c.limits.max_connections_per_client},
                 {"memory_budget", c.limits.memory_budget},
                 {"max_inflight", c.limits.max_inflight},
                 {"max_header_bytes", c.limits.max_header_bytes},
                 {"max_body_bytes", c.limits.max_body_bytes},
                 {"header_timeout", format_duration(c.limits.header_timeout)},
                 {"idle_timeout", format_duration(c.limits.idle_timeout)},
                 {"write_timeout", format_duration(c.limits.write_timeout)}};
  j["tracing"] = {{"enabled", c.tracing.enabled},
                  {"endpoint", c.tracing.endpoint},
                  {"sample_ratio", c.tracing.sample_ratio},
                  {"service_name", c.tracing.service_name},
                  {"max_queue_spans", c.tracing.max_queue_spans},
                  {"max_batch_spans", c.tracing.max_batch_spans},
                  {"batch_delay", format_duration(c.tracing.batch_delay)},
                  {"export_timeout", format_duration(c.tracing.export_timeout)}};
  j["shutdown"] = {{"drain_delay", format_duration(c.shutdown.drain_delay)},
                   {"timeout", format_duration(c.shutdown.timeout)}};
  j["log"] = {{"level", c.log.level},
              {"access", c.log.access},
              {"format", c.log.format == log_format::json ? "json" : "text"}};
  j["downstreams"] = nlohmann::json::object();
  for (const auto& d : c.downstreams) j["downstreams"][d.name] = downstream_json(d);
  j["routes"] = nlohmann::json::array();
  for (const auto& r : c.routes) j["routes"].push_back(route_json(r));
  if (c.redis.enabled) {
    j["redis"] = {{"url", "<redacted>"},
                  {"timeout", format_duration(c.redis.timeout)},
                  {"connect_timeout", format_duration(c.redis.connect_timeout)},
                  {"pool", c.redis.pool},
                  {"expected_replicas", c.redis.expected_replicas},
                  {"key_prefix", c.redis.key_prefix}};
  }
  redact_secrets(j, c.secret_values);
  return j;
}

}  // namespace gateway
