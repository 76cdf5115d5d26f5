#include "gateway/config/config_loader.hpp"

#include "gateway/config/param_pattern.hpp"
#include "gateway/config/yaml_reader.hpp"
#include "gateway/sql/sql_statement.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace gateway {
namespace {

std::optional<listen_address> parse_listen(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return std::nullopt;
  listen_address a;
  a.host = text.substr(0, colon);
  if (a.host.size() > 2 && a.host.front() == '[' && a.host.back() == ']')
    a.host = a.host.substr(1, a.host.size() - 2);
  unsigned long port = 0;
  for (char c : text.substr(colon + 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    port = port * 10 + static_cast<unsigned long>(c - '0');
    if (port > 65535) return std::nullopt;
  }
  a.port = static_cast<std::uint16_t>(port);
  return a;
}

// "http://host:port[/base]" -> settings fields; returns an error message or "".
std::string parse_downstream_url(downstream_settings& d) {
  constexpr std::string_view scheme = "http://";
  std::string_view url = d.url;
  if (url.substr(0, scheme.size()) != scheme) return "url must start with http://";
  url.remove_prefix(scheme.size());
  const auto slash = url.find('/');
  const std::string_view authority = url.substr(0, slash);
  std::string base = slash == std::string_view::npos ? std::string() : std::string(url.substr(slash));
  while (!base.empty() && base.back() == '/') base.pop_back();
  for (char c : base) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == '?' || c == '#')
      return "url base path has a forbidden character";
  }
  auto address = parse_listen(std::string(authority));
  if (!address) {
    if (authority.empty() || authority.find(':') != std::string_view::npos) return "url needs host[:port]";
    address = listen_address{std::string(authority), 80};
  }
  if (address->host.empty() || address->port == 0) return "url needs a host and a non-zero port";
  d.host = address->host;
  d.port = address->port;
  d.base_path = std::move(base);
  return {};
}

// Names end up in response headers (X-Degraded), logs and metric labels: keep them to a safe alphabet.
bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}
constexpr const char* name_rule = "must be 1-64 characters of A-Z a-z 0-9 - _ .";

// A route path is matched literally: no query, fragment, spaces or control characters.
bool valid_route_path(const std::string& path) {
  if (path.empty() || path.front() != '/') return false;
  for (const char c : path) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '?' || c == '#') return false;
  }
  return true;
}

// Serialises the members of a JSON object without its braces: {"a":1,"b":2} -> "a":1,"b":2
std::string object_members(const nlohmann::json& object) {
  std::string text = object.dump();
  return text.size() >= 2 ? text.substr(1, text.size() - 2) : std::string();
}

bool declared(const route_settings& route, const std::string& name) {
  return std::any_of(route.params.begin(), route.params.end(),
                     [&](const param_settings& p) { return p.name == name; });
}

// Replaces every ${NAME} in `text` with the environment variable's value. A missing variable or a bad
// reference is an error; `used` tells whether any value came from the environment.
bool substitute_env(const std::string& text, std::string& out, bool& used, std::string& problem) {
  out.clear();
  std::size_t i = 0;
  while (i < text.size()) {
    const auto start = text.find("${", i);
    if (start == std::string::npos) break;
    const auto end = text.find('}', start + 2);
    if (end == std::string::npos) {
      problem = "unterminated ${ in value";
      return false;
    }
    const std::string name = text.substr(start + 2, end - start - 2);
    const bool valid = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
    if (!valid) {
      problem = "bad environment reference ${" + name + "}";
      return false;
    }
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) {
      problem = "environment variable " + name + " is not set";
      return false;
    }
    out.append(text, i, start - i);
    out += value;
    used = true;
    i = end + 1;
  }
  out.append(text, i, std::string::npos);
  return true;
}

class loader {
 public:
  explicit loader(std::vector<config_error>& errors) : errors_(errors) {}

  gateway_config load(const YAML::Node& root) {
    gateway_config cfg;
    yaml_reader top(root, errors_, "top level");
    if (auto n = top.section("server")) read_server(*n, cfg.server);
    if (auto n = top.section("limits")) read_limits(*n, cfg.limits);
    if (auto n = top.section("log")) read_log(*n, cfg.log);
    if (auto n = top.section("admin")) read_admin(*n, cfg.admin);
    if (auto n = top.section("shutdown")) read_shutdown(*n, cfg.shutdown);
    if (auto n = top.section("downstreams")) read_downstreams(*n, cfg);
    if (auto n = top.section("routes", yaml_reader::kind::sequence)) read_routes(*n, cfg);
    top.finish();
    if (cfg.routes.empty() && errors_.empty()) errors_.push_back({1, 1, "no routes configured"});
    return cfg;
  }

 private:
  void read_server(const YAML::Node& node, server_settings& s) {
    yaml_reader r(node, errors_, "server");
    std::string listen;
    if (r.string("listen", listen)) {
      if (auto a = parse_listen(listen)) {
        s.listen = *a;
      } else {
        r.error_at("listen", "expected HOST:PORT, e.g. 0.0.0.0:8080");
      }
    }
    r.unsigned_int("threads", s.threads, 0, 256);
    r.size("coroutine_stack", s.coroutine_stack, 16 * 1024, 8 * 1024 * 1024);
    r.finish();
  }

  void read_admin(const YAML::Node& node, admin_settings& a) {
    yaml_reader r(node, errors_, "admin");
    std::string listen;
    if (r.string("listen", listen)) {
      if (auto address = parse_listen(listen)) {
        a.listen = *address;
      } else {
        r.error_at("listen", "expected HOST:PORT, e.g. 0.0.0.0:9901");
      }
    }
    if (r.duration("stall_threshold", a.stall_threshold) && a.stall_threshold < milliseconds(100))
      r.error_at("stall_threshold", "stall_threshold must be at least 100ms");
    r.finish();
  }

  void read_shutdown(const YAML::Node& node, shutdown_settings& s) {
    yaml_reader r(node, errors_, "shutdown");
    r.duration("drain_delay", s.drain_delay, true);
    r.duration("timeout", s.timeout);
    r.finish();
  }

  void read_limits(const YAML::Node& node, limits_settings& l) {
    yaml_reader r(node, errors_, "limits");
    r.size("max_connections", l.max_connections, 1, 10'000'000);
    r.size("max_inflight", l.max_inflight, 1, 10'000'000);
    r.size("max_header_bytes", l.max_header_bytes, 1024, 1024 * 1024);
    r.size("max_body_bytes", l.max_body_bytes, 0, 64 * 1024 * 1024);
    r.duration("header_timeout", l.header_timeout);
    r.duration("idle_timeout", l.idle_timeout);
    r.duration("write_timeout", l.write_timeout);
    r.finish();
  }

  void read_log(const YAML::Node& node, log_settings& l) {
    yaml_reader r(node, errors_, "log");
    if (r.string("level", l.level)) {
      static const std::set<std::string> levels{"trace", "debug", "info", "warn", "error", "critical", "off"};
      if (!levels.contains(l.level))
        r.error_at("level", "log level must be one of trace, debug, info, warn, error, critical, off");
    }
    r.boolean("access", l.access);
    std::string format;
    if (r.string("format", format)) {
      if (format == "json") {
        l.format = log_format::json;
      } else if (format == "text") {
        l.format = log_format::text;
      } else {
        r.error_at("format", "log format must be 'json' or 'text'");
      }
    }
    r.finish();
  }

  void read_downstreams(const YAML::Node& node, gateway_config& cfg) {
    yaml_reader map(node, errors_, "downstreams");
    map.each_entry([&](const std::string& name, const YAML::Node& value) {
      downstream_settings d;
      d.name = name;
      yaml_reader r(value, errors_, "downstream '" + name + "'");
      if (!valid_name(name)) r.error_here(std::string("downstream name ") + name_rule);
      std::string kind = "http";
      if (r.string("kind", kind) && kind != "http" && kind != "sql") {
        r.error_at("kind", "kind must be 'http' or 'sql'");
      }
      if (kind == "sql") {
        d.kind = downstream_kind::sql;
        read_sql_downstream(r, d);
      } else {
        if (r.string("url", d.url, true)) {
          if (auto problem = parse_downstream_url(d); !problem.empty()) r.error_at("url", problem);
        }
        r.duration("connect_timeout", d.connect_timeout);
        r.size("max_connections", d.max_connections, 1, 1'000'000);
        r.duration("idle_timeout", d.idle_timeout);
        if (r.duration("dns_refresh", d.dns_refresh) && d.dns_refresh < std::chrono::seconds(1))
          r.error_at("dns_refresh", "dns_refresh must be at least 1s");
      }
      r.size("max_response_bytes", d.max_response_bytes, 64, 256 * 1024 * 1024);
      r.finish();
      cfg.downstreams.push_back(std::move(d));
    });
  }

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
        r.boolean("read_only", sql.read_only);
      } else if (driver == "postgres") {
        sql.driver = sql_driver::postgres;
        std::string dsn;
        if (r.string("dsn", dsn, true)) {
          std::string problem;
          if (!substitute_env(dsn, sql.dsn, sql.dsn_has_env, problem)) r.error_at("dsn", problem);
        }
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

  void read_routes(const YAML::Node& node, gateway_config& cfg) {
    std::set<std::pair<std::string, std::string>> seen;
    for (const auto& item : node) {
      route_settings route;
      if (!read_route(item, cfg, route)) continue;
      if (!seen.emplace(route.path, route.method).second) {
        yaml_reader::report(errors_, item, "duplicate route " + route.method + " " + route.path);
        continue;
      }
      cfg.routes.push_back(std::move(route));
    }
  }

  bool read_route(const YAML::Node& node, const gateway_config& cfg, route_settings& route) {
    yaml_reader r(node, errors_, "route");
    if (!r.valid()) return false;
    if (r.string("path", route.path, true) && !valid_route_path(route.path)) {
      r.error_at("path",
                 "route path must start with '/' and hold no query, fragment, space or control character");
    }
    if (r.string("method", route.method)) {
      static const std::set<std::string> methods{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"};
      if (!methods.contains(route.method)) r.error_at("method", "unsupported method '" + route.method + "'");
    }
    r.duration("deadline", route.deadline);
    std::string shape;
    if (r.string("response", shape)) {
      if (shape == "array") {
        route.response = response_shape::array;
      } else if (shape == "object") {
        route.response = response_shape::object;
      } else {
        r.error_at("response", "response must be 'array' or 'object'");
      }
    }
    if (auto p = r.section("params")) read_params(*p, route);
    if (auto c = r.section("calls", yaml_reader::kind::sequence, true)) read_calls(*c, cfg, route);
    r.finish();
    return true;
  }

  void read_params(const YAML::Node& node, route_settings& route) {
    yaml_reader map(node, errors_, "params");
    map.each_entry([&](const std::string& name, const YAML::Node& value) {
      param_settings p;
      p.name = name;
      yaml_reader r(value, errors_, "param '" + name + "'");
      r.boolean("required", p.required);
      if (r.string("pattern", p.pattern)) {
        try {
          p.matcher = std::make_shared<const param_pattern>(p.pattern);
        } catch (const std::regex_error& e) {
          r.error_at("pattern", std::string("invalid regular expression: ") + e.what());
        }
      }
      r.finish();
      route.params.push_back(std::move(p));
    });
  }

  void read_calls(const YAML::Node& node, const gateway_config& cfg, route_settings& route) {
    std::set<std::string> names;
    for (const auto& item : node) {
      call_settings call;
      yaml_reader r(item, errors_, "call");
      if (!r.valid()) continue;
      if (r.string("name", call.name, true)) {
        if (!valid_name(call.name)) {
          r.error_at("name", std::string("call name ") + name_rule);
        } else if (!names.insert(call.name).second) {
          r.error_at("name", "duplicate call name '" + call.name + "'");
        }
      }
      if (r.string("downstream", call.downstream, true) && !cfg.find_downstream(call.downstream)) {
        r.error_at("downstream", "unknown downstream '" + call.downstream + "'");
      }
      const auto* target = cfg.find_downstream(call.downstream);
      if (target) call.downstream_index = static_cast<std::size_t>(target - cfg.downstreams.data());
      const bool sql = target && target->kind == downstream_kind::sql;
      std::string path;
      if (sql) {
        if (r.string("path", path)) r.error_at("path", "a call to a sql downstream has no path");
        for (const auto& name : target->sql.params) {
          if (!declared(route, name))
            r.error_at("downstream",
                       "query of '" + call.downstream + "' names undeclared parameter '" + name + "'");
        }
      } else if (r.string("path", path, true)) {
        std::string problem;
        if (auto t = path_template::parse(path, problem)) {
          call.path = std::move(*t);
          for (const auto& name : call.path.param_names()) {
            if (!declared(route, name))
              r.error_at("path", "template names undeclared parameter '" + name + "'");
          }
        } else {
          r.error_at("path", problem);
        }
      }
      microseconds timeout{};
      if (r.duration("timeout", timeout)) call.timeout = timeout;
      r.boolean("required", call.required);
      r.string_list("fields", call.fields);
      nlohmann::json fallback = nlohmann::json::object();
      r.json_object("fallback", fallback);
      fallback.erase("source");
      fallback.erase("degraded");
      call.fallback_members = object_members(fallback);
      r.finish();
      route.calls.push_back(std::move(call));
    }
    if (route.calls.empty()) yaml_reader::report(errors_, node, "a route needs at least one call");
  }

  std::vector<config_error>& errors_;
};

}  // namespace

config_load_result load_config_text(std::string_view yaml, const std::string& source_name) {
  config_load_result result;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    result.errors.push_back({e.mark.line + 1, e.mark.column + 1, e.msg});
    return result;
  }
  if (!root.IsMap()) {
    result.errors.push_back({1, 1, "the configuration must be a YAML mapping"});
    return result;
  }
  auto cfg = loader(result.errors).load(root);
  cfg.source = source_name;
  if (result.errors.empty()) result.config = std::move(cfg);
  return result;
}

config_load_result load_config_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {std::nullopt, {{0, 0, "cannot open file"}}};
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > 16 * 1024 * 1024) return {std::nullopt, {{0, 0, "file larger than 16 MiB"}}};
  return load_config_text(text.str(), path);
}

std::string format_config_error(const std::string& file, const config_error& error) {
  return file + ":" + std::to_string(error.line) + ":" + std::to_string(error.column) + ": " + error.message;
}

}  // namespace gateway
