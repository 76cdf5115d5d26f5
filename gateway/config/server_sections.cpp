// The sections about the gateway process itself: server (listener, threads, stacks), limits, log, admin
// and shutdown. Each is one flat mapping of scalar settings (server also holds its compression and tls
// mappings).

#include "gateway/config/config_sections.hpp"
#include "gateway/config/config_values.hpp"
#include "gateway/config/yaml_reader.hpp"
#include "gateway/tls/tls_server_context.hpp"

#include <array>
#include <cstdlib>
#include <string_view>

namespace gateway {

namespace {

void read_listen(yaml_reader& r, const std::string& example, listen_address& out,
                 std::optional<YAML::Mark>& at) {
  std::string listen;
  if (!r.string("listen", listen)) return;
  if (auto problem = parse_listen(listen, example, out); !problem.empty()) {
    r.error_at("listen", problem);
  } else {
    at = r.mark_of("listen");
  }
}

void read_compression(config_parse_state& state, const YAML::Node& node, compression_settings& c) {
  yaml_reader r(node, state.errors, "server.compression");
  r.boolean("enabled", c.enabled);
  const bool min_written = r.size("min_bytes", c.min_bytes, 0, std::size_t{1} << 30);
  const bool max_written = r.size("max_bytes", c.max_bytes, 0, std::size_t{1} << 30);
  if (c.max_bytes < c.min_bytes) {
    r.error_at(max_written || !min_written ? "max_bytes" : "min_bytes",
               "max_bytes must not be below min_bytes");
  }
  r.unsigned_int("level", c.level, 1, 9);
  r.finish();
}

// The listener's TLS. The context is built, and the files read, only when the section itself is free of
// errors: a missing file, a key that does not match its certificate or unknown ciphers are config errors.
void read_listener_tls(config_parse_state& state, const YAML::Node& node, listener_tls_settings& t) {
  const auto errors_before = state.errors.size();
  yaml_reader r(node, state.errors, "server.tls");
  t.enabled = true;
  r.string("cert_file", t.cert_file, true);
  r.string("key_file", t.key_file, true);
  static constexpr std::array<std::string_view, 2> versions{"1.2", "1.3"};
  std::size_t version = 0;
  if (r.one_of("min_version", version, versions, "min_version")) t.min_tls13 = version == 1;
  r.string("ciphers", t.ciphers);
  if (r.duration("reload_interval", t.reload_interval) && t.reload_interval < milliseconds(100))
    r.error_at("reload_interval", "reload_interval must be at least 100ms");
  r.finish();
  if (state.errors.size() != errors_before || state.offline) return;
  tls_server_context::problem why;
  t.context = tls_server_context::load(t, why);
  if (!t.context) r.error_at(why.key, why.message);
}

// server.stack_cache (freed stacks kept per thread) is retired: a stack is now Boost.Context's
// protected_fixedsize_stack, unmapped when its coroutine ends. A configuration that sets it still loads.
void read_retired_stack_cache(config_parse_state& state, yaml_reader& r) {
  std::size_t ignored = 0;
  if (!r.size("stack_cache", ignored, 0, 65536)) return;
  yaml_reader::report(state.warnings, *r.mark_of("stack_cache"),
                      "server.stack_cache is retired and has no effect (coroutine stacks are not cached "
                      "any more: each is unmapped when its coroutine ends); remove it");
}

}  // namespace

void read_server(config_parse_state& state, const YAML::Node& node, server_settings& s) {
  yaml_reader r(node, state.errors, "server");
  read_listen(r, "0.0.0.0:8080", s.listen, state.server_listen_at);
  r.unsigned_int("threads", s.threads, 0, 256);
  r.size("coroutine_stack", s.coroutine_stack, 16 * 1024, 8 * 1024 * 1024);
  read_retired_stack_cache(state, r);
  r.boolean("reuse_port", s.reuse_port);
  r.boolean("watch_config", s.watch_config);
  read_forwarding(r, s);
  static constexpr std::array<std::string_view, 2> details{"full", "reason"};
  std::size_t detail = 0;
  if (r.one_of("error_detail", detail, details, "error_detail")) s.errors = static_cast<error_detail>(detail);
  if (auto c = r.section("compression")) read_compression(state, *c, s.compression);
  if (auto t = r.section("tls")) read_listener_tls(state, *t, s.tls);
  r.finish();
}

void read_admin(config_parse_state& state, const YAML::Node& node, admin_settings& a) {
  yaml_reader r(node, state.errors, "admin");
  read_listen(r, "0.0.0.0:9901", a.listen, state.admin_listen_at);
  if (r.duration("stall_threshold", a.stall_threshold) && a.stall_threshold < milliseconds(100))
    r.error_at("stall_threshold", "stall_threshold must be at least 100ms");
  if (r.string("token", a.token) && a.token.size() < 16)
    r.error_at("token", "token must be at least 16 characters");
  if (r.boolean("require_token", a.require_token) && a.require_token && a.token.empty())
    r.error_at("require_token", "require_token needs admin.token");
  r.size("max_connections", a.max_connections, 1, 65536);
  if (r.size("max_connections_per_client", a.max_connections_per_client, 0, 65536) &&
      a.max_connections_per_client > a.max_connections)
    r.error_at("max_connections_per_client", "max_connections_per_client must not be above max_connections");
  if (r.duration("header_timeout", a.header_timeout) && a.header_timeout < milliseconds(100))
    r.error_at("header_timeout", "header_timeout must be at least 100ms");
  if (r.duration("idle_timeout", a.idle_timeout) && a.idle_timeout < milliseconds(100))
    r.error_at("idle_timeout", "idle_timeout must be at least 100ms");
  r.finish();
}

void read_shutdown(config_parse_state& state, const YAML::Node& node, shutdown_settings& s) {
  yaml_reader r(node, state.errors, "shutdown");
  r.duration("drain_delay", s.drain_delay, true);
  r.duration("timeout", s.timeout);
  r.finish();
}

void read_tracing(config_parse_state& state, const YAML::Node& node, tracing_config& t) {
  yaml_reader r(node, state.errors, "tracing");
  r.boolean("enabled", t.enabled);
  if (r.string("endpoint", t.endpoint)) {
    const std::string_view e = t.endpoint;
    const auto host = e.substr(std::min(e.size(), std::string_view("http://").size()));
    if (!e.starts_with("http://") || host.empty() || host.front() == '/' ||
        host.find('/') == std::string_view::npos)
      r.error_at("endpoint",
                 "endpoint must be an http:// URL with a host and a path, e.g. "
                 "http://otel-collector:4318/v1/traces (https is not supported)");
  }
  std::string ratio;
  if (r.string("sample_ratio", ratio)) {
    char* end = nullptr;
    const double value = std::strtod(ratio.c_str(), &end);
    if (ratio.empty() || end != ratio.c_str() + ratio.size() || !(value >= 0.0 && value <= 1.0)) {
      r.error_at("sample_ratio", "sample_ratio must be a number from 0 to 1");
    } else {
      t.sample_ratio = value;
    }
  }
  if (r.string("service_name", t.service_name) && t.service_name.empty())
    r.error_at("service_name", "service_name must not be empty");
  r.size("max_queue_spans", t.max_queue_spans, 1, 1 << 20);
  if (r.size("max_batch_spans", t.max_batch_spans, 1, 1 << 20) && t.max_batch_spans > t.max_queue_spans)
    r.error_at("max_batch_spans", "max_batch_spans must not be above max_queue_spans");
  r.duration("batch_delay", t.batch_delay);
  r.duration("export_timeout", t.export_timeout);
  r.finish();
}

void read_limits(config_parse_state& state, const YAML::Node& node, limits_settings& l) {
  yaml_reader r(node, state.errors, "limits");
  r.size("max_connections", l.max_connections, 1, 10'000'000);
  r.size("max_connections_per_client", l.max_connections_per_client, 0, 10'000'000);
  r.size("memory_budget", l.memory_budget, 0, std::size_t{1} << 40);
  r.size("max_inflight", l.max_inflight, 1, 10'000'000);
  r.size("max_header_bytes", l.max_header_bytes, 1024, 1024 * 1024);
  r.size("max_body_bytes", l.max_body_bytes, 0, 64 * 1024 * 1024);
  r.duration("header_timeout", l.header_timeout);
  r.duration("idle_timeout", l.idle_timeout);
  r.duration("write_timeout", l.write_timeout);
  r.finish();
}

void read_log(config_parse_state& state, const YAML::Node& node, log_settings& l) {
  yaml_reader r(node, state.errors, "log");
  static constexpr std::array<std::string_view, 7> levels{"trace", "debug",    "info", "warn",
                                                          "error", "critical", "off"};
  std::size_t level = 0;
  if (r.one_of("level", level, levels, "log level")) l.level = levels[level];
  r.boolean("access", l.access);
  static constexpr std::array<std::string_view, 2> formats{"json", "text"};
  std::size_t format = 0;
  if (r.one_of("format", format, formats, "log format")) {
    l.format = format == 0 ? log_format::json : log_format::text;
  }
  r.finish();
}

}  // namespace gateway
