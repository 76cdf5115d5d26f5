// The `downstreams` mapping: one entry per downstream, keyed by its name; kind http (a URL, connection
// limits and timeouts) or sql (a driver, its database, the pool and the query).

#include "gateway/codec/sql_statement.hpp"
#include "gateway/config/config_sections.hpp"
#include "gateway/config/config_values.hpp"
#include "gateway/config/yaml_reader.hpp"
#include "gateway/tls/tls_client_context.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <string_view>

namespace gateway {

namespace {

void read_sql_downstream(yaml_reader& r, downstream_settings& d) {
  auto& sql = d.sql;
  d.connect_timeout = std::chrono::seconds(2);
  r.duration("connect_timeout", d.connect_timeout);
  std::string driver;
  if (r.string("driver", driver, true)) {
    if (driver == "sqlite") {
      sql.driver = sql_driver::sqlite;
      if (r.string("database", sql.database, true) && sql.database.empty())
        r.error_at("database", "database must name a file");
      if (auto at = r.mark_of("database")) sql.database_at = {at->line + 1, at->column + 1};
      r.boolean("read_only", sql.read_only);
    } else if (driver == "postgres") {
      sql.driver = sql_driver::postgres;
      if (r.string("dsn", sql.dsn, true)) sql.dsn_has_env = r.from_environment("dsn");
    } else {
      r.error_at("driver", "driver must be 'sqlite' or 'postgres'");
    }
  }
  r.size("pool_size", sql.pool_size, 1, 1024);
  if (r.size("permits", sql.permits, 1, 1024) && sql.permits > sql.pool_size)
    r.error_at("permits", "permits cannot exceed pool_size (a permit holder must find a connection)");
  r.size("max_waiting", sql.max_waiting, 0, 1'000'000);
  if (r.string("query", sql.query, true)) {
    const auto style =
        sql.driver == sql_driver::postgres ? placeholder_style::dollar : placeholder_style::question;
    std::string problem;
    if (auto statement = parse_sql_statement(sql.query, style, problem)) {
      sql.statement = std::move(statement->text);
      sql.params = std::move(statement->names);
    } else {
      r.error_at("query", problem);
    }
  }
}

// `failures: [connect, reset, timeout, invalid_answer, 5xx, 4xx, 429, ...]`: what counts against the
// downstream (failure_rule); a status code counts whatever its class.
void read_failure_rule(yaml_reader& r, failure_rule& rule) {
  std::vector<std::string> listed;
  if (!r.string_list("failures", listed)) return;
  rule = {0, {}};
  for (const auto& text : listed) {
    const auto kind = std::find_if(failure_kind_names.begin(), failure_kind_names.end(),
                                   [&](const auto& k) { return k.first == text; });
    if (kind != failure_kind_names.end()) {
      rule.kinds |= kind->second;
      continue;
    }
    const auto status = parse_status_code(text, 100, 599);
    if (!status) {
      r.error_at("failures",
                 "failures lists connect, reset, timeout, invalid_answer, 5xx, 4xx or HTTP status "
                 "codes (100-599), not '" +
                     text + "'");
      return;
    }
    rule.statuses.push_back(static_cast<std::uint16_t>(*status));
  }
}

void read_breaker(config_parse_state& state, const YAML::Node& node, downstream_settings& d) {
  auto& b = d.breaker;
  yaml_reader r(node, state.errors, "downstream '" + d.name + "'.circuit_breaker");
  r.boolean("enabled", b.enabled);
  r.boolean("per_endpoint", b.per_endpoint);
  r.duration("window", b.window);
  r.unsigned_int("min_calls", b.min_calls, 1, 1'000'000);
  r.unsigned_int("failure_percent", b.failure_percent, 1, 100);
  r.unsigned_int("consecutive_failures", b.consecutive_failures, 0, 1'000'000);
  r.duration("cooldown", b.cooldown);
  r.unsigned_int("half_open_calls", b.half_open_calls, 1, 1000);
  if (b.window < std::chrono::milliseconds(100)) r.error_at("window", "window must be at least 100ms");
  read_failure_rule(r, b.failures);
  r.finish();
}

void read_retry(config_parse_state& state, const YAML::Node& node, downstream_settings& d) {
  auto& rt = d.retry;
  yaml_reader r(node, state.errors, "downstream '" + d.name + "'.retry");
  r.unsigned_int("attempts", rt.attempts, 1, 10);
  std::vector<std::string> statuses;
  if (r.string_list("on_status", statuses)) {
    rt.on_status.clear();
    for (const auto& text : statuses) {
      const auto status = parse_status_code(text, 100, 599);
      if (!status) {
        r.error_at("on_status", "on_status must list HTTP status codes (100-599), not '" + text + "'");
        break;
      }
      rt.on_status.push_back(*status);
    }
  }
  r.boolean("on_reset", rt.on_reset);
  r.duration("backoff", rt.backoff, true);
  r.duration("max_backoff", rt.max_backoff, true);
  r.unsigned_int("budget_percent", rt.budget_percent, 0, 100);
  r.unsigned_int("budget_min", rt.budget_min, 0, 1'000'000);
  r.finish();
}

void read_stale(config_parse_state& state, const YAML::Node& node, downstream_settings& d) {
  auto& st = d.stale;
  st.enabled = true;  // the section turns it on unless it says otherwise
  yaml_reader r(node, state.errors, "downstream '" + d.name + "'.stale_if_error");
  r.boolean("enabled", st.enabled);
  r.duration("max_stale", st.max_stale);
  r.size("max_bytes", st.max_bytes, 1024, std::size_t{1} << 30);
  r.finish();
}

void read_ejection(config_parse_state& state, const YAML::Node& node, downstream_settings& d) {
  auto& e = d.ejection;
  yaml_reader r(node, state.errors, "downstream '" + d.name + "'.outlier_ejection");
  r.unsigned_int("consecutive_failures", e.consecutive_failures, 0, 1'000'000);
  r.duration("base_time", e.base_time);
  r.duration("max_time", e.max_time);
  r.unsigned_int("max_percent", e.max_percent, 0, 100);
  if (e.base_time > e.max_time) r.error_at("base_time", "base_time must not exceed max_time");
  r.finish();
}

void read_endpoints(yaml_reader& r, downstream_settings& d) {
  std::vector<std::string> listed;
  if (!r.string_list("endpoints", listed)) return;
  for (const auto& text : listed) {
    auto parts = split_host_port(text);
    endpoint_address a;
    if (!parts || parts->first.empty() || !parse_port(parts->second, 1, a.port).empty()) {
      r.error_at("endpoints", "an endpoint must be host:port, not '" + text + "'");
      return;
    }
    a.host = std::move(parts->first);
    d.endpoints.push_back(std::move(a));
  }
  if (d.endpoints.size() > 256) r.error_at("endpoints", "at most 256 endpoints");
}

void read_hedge(config_parse_state& state, const YAML::Node& node, downstream_settings& d) {
  auto& h = d.hedge;
  h.enabled = true;  // a hedge section turns hedging on unless it says otherwise
  yaml_reader r(node, state.errors, "downstream '" + d.name + "'.hedge");
  r.boolean("enabled", h.enabled);
  std::string delay;
  if (r.string("delay", delay)) {
    unsigned percentile = 0;
    const auto [end, ec] = std::from_chars(delay.data() + std::min<std::size_t>(1, delay.size()),
                                           delay.data() + delay.size(), percentile);
    if (delay.starts_with('p') && ec == std::errc() && end == delay.data() + delay.size() &&
        percentile >= 50 && percentile <= 99) {
      h.delay = microseconds(0);
      h.percentile = percentile;
    } else if (auto fixed = parse_duration(delay); fixed && fixed->count() > 0) {
      h.delay = *fixed;
    } else {
      r.error_at("delay",
                 "delay must be a duration such as 50ms or a percentile of recent latency, p50 to p99");
    }
  }
  r.duration("min_delay", h.min_delay);
  r.duration("max_delay", h.max_delay);
  r.unsigned_int("budget_percent", h.budget_percent, 1, 100);
  if (h.min_delay > h.max_delay) r.error_at("min_delay", "min_delay must not exceed max_delay");
  r.finish();
}

// A DNS name (letters, digits, '-', '.'), or an IP address (IPv6 with ':'), as the certificate must name.
bool valid_server_name(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == ':';
  });
}

}  // namespace

// The `tls` section of an https downstream (an http:// one may not have one). The context is built, and
// its files read, only when the section itself is free of errors.
void read_tls(config_parse_state& state, const YAML::Node* node, downstream_settings& d, yaml_reader& parent,
              const std::string& key, const std::string& what) {
  auto& t = d.tls;
  if (!t.enabled) {
    if (node != nullptr) parent.error_at(key, "a tls section needs an https:// url");
    return;
  }
  const auto errors_before = state.errors.size();
  std::optional<yaml_reader> r;
  if (node != nullptr) {
    r.emplace(*node, state.errors, what);
    r->boolean("verify", t.verify);
    r->string("ca_file", t.ca_file);
    if (r->string("server_name", t.server_name) && !valid_server_name(t.server_name))
      r->error_at("server_name", "server_name must be a host name or an IP address");
    r->string("cert_file", t.cert_file);
    r->string("key_file", t.key_file);
    if (t.cert_file.empty() != t.key_file.empty())
      r->error_at(t.cert_file.empty() ? "key_file" : "cert_file", "cert_file and key_file go together");
    r->finish();
  }
  if (state.errors.size() != errors_before || state.offline) return;
  tls_client_context::problem why;
  // Taken before the files are read for the context: a change in between shows at the next check.
  t.files_digest = tls_client_context::files_digest(t);
  t.context = tls_client_context::make(t, d.host, why);
  if (t.context) return;
  if (r) {
    r->error_at(why.key, why.message);
  } else {
    parent.error_at(key == "tls" ? "url" : "jwks_url", why.message);  // the system's trust store
  }
}

void read_downstreams(config_parse_state& state, const YAML::Node& node, gateway_config& cfg) {
  yaml_reader map(node, state.errors, "downstreams");
  map.each_entry("downstream", [&](const std::string& name, yaml_reader& r) {
    downstream_settings d;
    d.name = name;
    if (!valid_name(name)) r.error_here(std::string("downstream name ") + name_rule);
    static constexpr std::array<std::string_view, 2> kinds{"http", "sql"};
    std::size_t kind = 0;
    r.one_of("kind", kind, kinds, "kind");
    if (kind == 1) {
      d.kind = downstream_kind::sql;
      read_sql_downstream(r, d);
    } else {
      if (r.string("url", d.url, true)) {
        if (auto problem = parse_downstream_url(d); !problem.empty()) r.error_at("url", problem);
      }
      r.duration("connect_timeout", d.connect_timeout);
      if (r.size("max_connections", d.max_connections, 1, 1'000'000)) {
        if (auto at = r.mark_of("max_connections")) state.downstream_max_at.emplace_back(d.name, *at);
      }
      r.size("max_connecting", d.max_connecting, 1, 1'000'000);
      r.duration("idle_timeout", d.idle_timeout);
      if (r.duration("dns_refresh", d.dns_refresh) && d.dns_refresh < std::chrono::seconds(1))
        r.error_at("dns_refresh", "dns_refresh must be at least 1s");
      read_endpoints(r, d);
      r.boolean("coalesce", d.coalesce);
      r.boolean("cache", d.stale.cache);
      r.boolean("compressed", d.compressed);
      if (auto e = r.section("outlier_ejection")) read_ejection(state, *e, d);
      if (auto rt = r.section("retry")) read_retry(state, *rt, d);
      if (auto h = r.section("hedge")) read_hedge(state, *h, d);
      const auto tls = r.section("tls");
      read_tls(state, tls ? &*tls : nullptr, d, r, "tls", "downstream '" + d.name + "'.tls");
    }
    r.size("max_response_bytes", d.max_response_bytes, 64, 256 * 1024 * 1024);
    if (auto b = r.section("circuit_breaker")) read_breaker(state, *b, d);
    if (auto st = r.section("stale_if_error")) read_stale(state, *st, d);
    cfg.downstreams.push_back(std::move(d));
  });
}

}  // namespace gateway
