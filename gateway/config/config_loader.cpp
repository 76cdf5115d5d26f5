#include "gateway/config/config_loader.hpp"

#include "gateway/config/config_json.hpp"
#include "gateway/config/param_pattern.hpp"
#include "gateway/config/yaml_reader.hpp"
#include "gateway/sql/sql_statement.hpp"

#include <boost/asio/ip/address.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>

namespace gateway {
namespace {

// "HOST:PORT" or "[V6]:PORT" split into the host and the port's digits; nothing when it has no such shape.
std::optional<std::pair<std::string, std::string>> split_host_port(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return std::nullopt;
  std::string host(text.substr(0, colon));
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const auto digits = text.substr(colon + 1);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::pair(std::move(host), std::string(digits));
}

// The port written in `digits`, or an error message when it is outside lowest..65535.
std::string parse_port(const std::string& digits, unsigned lowest, std::uint16_t& port) {
  const auto first = digits.find_first_not_of('0');
  const bool fits = first == std::string::npos || digits.size() - first <= 5;
  const unsigned long value = fits ? std::stoul(digits) : 0;
  if (!fits || value < lowest || value > 65535)
    return "port " + digits + " out of range " + std::to_string(lowest) + "-65535";
  port = static_cast<std::uint16_t>(value);
  return {};
}

// A listener's "HOST:PORT": the host must be an IP address (it is bound, not resolved), port 0 is
// ephemeral. Returns an error message or "".
std::string parse_listen(const std::string& text, const std::string& example, listen_address& out) {
  const auto parts = split_host_port(text);
  if (!parts) return "expected HOST:PORT, e.g. " + example;
  boost::system::error_code ec;
  boost::asio::ip::make_address(parts->first, ec);
  if (ec) return "'" + parts->first + "' is not an IP address";
  std::uint16_t port = 0;
  if (auto problem = parse_port(parts->second, 0, port); !problem.empty()) return problem;
  out = {parts->first, port};
  return {};
}

// Whether two listeners cannot both bind: one port (not 0: each gets its own) and the same address, or a
// wildcard address that covers the other (the IPv6 wildcard is dual-stack: it covers IPv4 addresses too).
bool listeners_overlap(const listen_address& a, const listen_address& b) {
  if (a.port != b.port || a.port == 0) return false;
  boost::system::error_code ec;
  const auto x = boost::asio::ip::make_address(a.host, ec);
  const auto y = boost::asio::ip::make_address(b.host, ec);
  if (ec) return false;
  const auto covers = [](const boost::asio::ip::address& wildcard, const boost::asio::ip::address& other) {
    return wildcard.is_unspecified() && (wildcard.is_v6() || other.is_v4());
  };
  return x == y || covers(x, y) || covers(y, x);
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
  std::string host(authority);
  std::uint16_t port = 80;
  if (authority.find(':') != std::string_view::npos) {
    auto parts = split_host_port(authority);
    if (!parts) return "url needs host[:port]";
    if (auto problem = parse_port(parts->second, 1, port); !problem.empty()) return problem;
    host = std::move(parts->first);
  }
  if (host.empty()) return "url needs host[:port]";
  d.host = std::move(host);
  d.port = port;
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

// A route path is matched exactly: no query, fragment, spaces, control characters or {parameters}.
// Returns an error message or "".
std::string route_path_problem(const std::string& path) {
  if (path.find_first_of("{}") != std::string::npos)
    return "route path parameters like {id} are not supported yet: a route path is matched exactly";
  const bool bad = path.empty() || path.front() != '/' || std::any_of(path.begin(), path.end(), [](char c) {
                     return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '?' || c == '#';
                   });
  return bad ? "route path must start with '/' and hold no query, fragment, space or control character" : "";
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
    check_across_sections(cfg);
    if (cfg.routes.empty() && errors_.empty()) errors_.push_back({1, 1, "no routes configured"});
    return cfg;
  }

 private:
  // Settings that are valid alone but cannot work together, reported where the later one is written.
  void check_across_sections(const gateway_config& cfg) {
    if (listeners_overlap(cfg.server.listen, cfg.admin.listen) && (admin_listen_at_ || server_listen_at_)) {
      const auto at = admin_listen_at_ ? *admin_listen_at_ : *server_listen_at_;
      yaml_reader::report(errors_, at,
                          std::string(admin_listen_at_ ? "admin.listen" : "server.listen") +
                              ": the admin listener and the public listener overlap (server.listen " +
                              format_listen(cfg.server.listen) + ", admin.listen " +
                              format_listen(cfg.admin.listen) + "): give them different ports");
    }
    // Each I/O thread keeps its own connections to an HTTP downstream, an equal share of max_connections
    // and at least one; fewer than the threads cannot be shared out (threads: 0 is checked at start).
    for (const auto& [name, at] : downstream_max_at_) {
      const auto* d = cfg.find_downstream(name);
      if (cfg.server.threads == 0 || d == nullptr || d->kind != downstream_kind::http ||
          d->max_connections >= cfg.server.threads) {
        continue;
      }
      yaml_reader::report(errors_, at,
                          "downstreams." + name + ".max_connections: " + std::to_string(d->max_connections) +
                              " is less than server.threads " + std::to_string(cfg.server.threads) +
                              ": each I/O thread keeps its own connections and needs at least one");
    }
  }

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

  void read_server(const YAML::Node& node, server_settings& s) {
    yaml_reader r(node, errors_, "server");
    read_listen(r, "0.0.0.0:8080", s.listen, server_listen_at_);
    r.unsigned_int("threads", s.threads, 0, 256);
    r.size("coroutine_stack", s.coroutine_stack, 16 * 1024, 8 * 1024 * 1024);
    r.size("stack_cache", s.stack_cache, 0, 65536);
    r.finish();
  }

  void read_admin(const YAML::Node& node, admin_settings& a) {
    yaml_reader r(node, errors_, "admin");
    read_listen(r, "0.0.0.0:9901", a.listen, admin_listen_at_);
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
        if (r.size("max_connections", d.max_connections, 1, 1'000'000)) {
          if (auto at = r.mark_of("max_connections")) downstream_max_at_.emplace_back(d.name, *at);
        }
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
    if (r.string("path", route.path, true)) {
      if (auto problem = route_path_problem(route.path); !problem.empty()) r.error_at("path", problem);
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
      if (r.string("pattern", p.pattern) && !p.pattern.empty()) {
        std::string problem;
        p.matcher = param_pattern::compile(p.pattern, problem);
        if (!p.matcher) r.error_at("pattern", "invalid pattern (RE2 syntax): " + problem);
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
      if (r.duration("timeout", timeout)) {
        call.timeout = timeout;
        if (timeout > route.deadline)
          r.error_at("timeout", "timeout " + format_duration(timeout) + " exceeds the route deadline " +
                                    format_duration(route.deadline) + ": it can never apply");
      }
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
  // Where values checked against other sections were written (unset: not written, the default applies).
  std::optional<YAML::Mark> server_listen_at_;
  std::optional<YAML::Mark> admin_listen_at_;
  std::vector<std::pair<std::string, YAML::Mark>> downstream_max_at_;  // downstream -> its max_connections
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
  // In file order: a typo is then reported before the errors it causes further down.
  std::stable_sort(result.errors.begin(), result.errors.end(),
                   [](const config_error& a, const config_error& b) {
                     return std::pair(a.line, a.column) < std::pair(b.line, b.column);
                   });
  if (result.errors.empty()) result.config = std::move(cfg);
  return result;
}

config_load_result load_config_file(const std::string& path) {
  constexpr std::size_t max_bytes = 16 * 1024 * 1024;
  const auto failed = [](const char* what, int err) {
    return config_load_result{std::nullopt, {{0, 0, std::string(what) + ": " + std::strerror(err)}}};
  };
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) return failed("cannot open file", errno);
  std::string text;
  std::array<char, 64 * 1024> buffer;
  while (text.size() <= max_bytes) {
    const auto n = std::fread(buffer.data(), 1, buffer.size(), file.get());
    if (n < buffer.size() && std::ferror(file.get())) return failed("cannot read file", errno);  // EISDIR
    text.append(buffer.data(), n);
    if (n < buffer.size()) break;
  }
  if (text.size() > max_bytes) return {std::nullopt, {{0, 0, "file larger than 16 MiB"}}};
  return load_config_text(text, path);
}

std::string format_config_error(const std::string& file, const config_error& error) {
  if (error.line == 0) return file + ": " + error.message;
  return file + ":" + std::to_string(error.line) + ":" + std::to_string(error.column) + ": " + error.message;
}

}  // namespace gateway
