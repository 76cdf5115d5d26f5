// The `routes` sequence: each route's path, method and header policy, then what it is: an aggregate
// route (aggregate_route: its deadline and response shape, its `params`, each optionally with an RE2
// pattern, and its `calls`, each to a downstream already read, with a path template for HTTP, a timeout,
// the fields kept and a fallback; a call may name only declared params) or a pass-through route (its
// `proxy` section, proxy_route).

#include "gateway/codec/char_class.hpp"
#include "gateway/config/config_json.hpp"
#include "gateway/config/config_sections.hpp"
#include "gateway/config/config_values.hpp"
#include "gateway/config/param_pattern.hpp"
#include "gateway/config/yaml_reader.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <set>

namespace gateway {

namespace {

// Serialises the members of a JSON object without its braces: {"a":1,"b":2} -> "a":1,"b":2
std::string object_members(const nlohmann::json& object) {
  std::string text = object.dump();
  return text.size() >= 2 ? text.substr(1, text.size() - 2) : std::string();
}

// Whether `name` is one of the route's parameters. "{jwt.claim}" on a route that verifies a JWT becomes one,
// filled from the caller's verified token only (never from the request).
bool declared(aggregate_route& route, const std::string& name) {
  if (std::any_of(route.params.begin(), route.params.end(),
                  [&](const param_settings& p) { return p.name == name; }))
    return true;
  if (!route.verifies_jwt || !name.starts_with("jwt.") || name.size() == 4) return false;
  param_settings p;
  p.name = name;
  p.from_identity = true;
  route.params.push_back(std::move(p));
  return true;
}

void read_params(config_parse_state& state, const YAML::Node& node, aggregate_route& route) {
  yaml_reader map(node, state.errors, "params");
  map.each_entry("param", [&](const std::string& name, yaml_reader& r) {
    param_settings p;
    p.name = name;
    r.boolean("required", p.required);
    if (r.string("pattern", p.pattern) && !p.pattern.empty()) {
      std::string problem;
      p.matcher = param_pattern::compile(p.pattern, problem);
      if (!p.matcher) r.error_at("pattern", "invalid pattern (RE2 syntax): " + problem);
    }
    route.params.push_back(std::move(p));
  });
}

// The path template's parameters are params too: declared ones (for their pattern) are marked in_path,
// the others added. A segment parameter is always required (an empty segment does not match); a
// catch-all is required only when declared so.
void add_path_params(const route_pattern& pattern, aggregate_route& route) {
  for (const auto& name : pattern.names()) {
    const bool catch_all = pattern.has_catch_all() && name == pattern.names().back();
    auto it = std::find_if(route.params.begin(), route.params.end(),
                           [&](const param_settings& p) { return p.name == name; });
    if (it == route.params.end()) {
      param_settings p;
      p.name = name;
      p.in_path = true;
      p.required = !catch_all;
      route.params.push_back(std::move(p));
      continue;
    }
    it->in_path = true;
    if (!catch_all) it->required = true;
  }
}

// An HTTP call's method, body and idempotency. A body goes with POST, PUT, PATCH or DELETE only.
void read_call_method_and_body(yaml_reader& r, aggregate_route& route, call_settings& call) {
  if (r.string("method", call.method)) {
    // A call's answer is a JSON object: methods without one (HEAD) are no use here.
    static const std::set<std::string> methods{"GET", "POST", "PUT", "PATCH", "DELETE"};
    if (!methods.contains(call.method))
      r.error_at("method",
                 "a call's method must be GET, POST, PUT, PATCH or DELETE, not '" + call.method + "'");
  }
  const bool safe = call.method == "GET";
  call.idempotent = call.method != "POST" && call.method != "PATCH";
  r.boolean("idempotent", call.idempotent);
  std::string body;
  r.advise("body",
           "body takes 'client' (the client's JSON body passed on) or is left out; to build a JSON "
           "body from parameters use body_template");
  if (r.string("body", body)) {
    if (body == "client") {
      call.body = call_body::client;
      route.takes_body = true;
    } else {
      r.error_at("body", "body must be 'client' (the client's JSON body); use body_template to build one");
    }
  }
  nlohmann::json built = nlohmann::json::object();
  if (r.json_object("body_template", built)) {
    std::string problem;
    if (call.body != call_body::none) {
      r.error_at("body_template", "a call has either body or body_template");
    } else if (auto t = body_template::parse(built.dump(), problem)) {
      call.body = call_body::built;
      call.built_body = std::move(*t);
      for (const auto& name : call.built_body.param_names()) {
        if (!declared(route, name) && !names_reference(route, name))
          r.error_at("body_template", "body_template names undeclared parameter '" + name + "'");
      }
    } else {
      r.error_at("body_template", problem);
    }
  }
  if (call.body != call_body::none && safe)
    r.error_at(call.body == call_body::client ? "body" : "body_template",
               "a call with a body must use POST, PUT, PATCH or DELETE, not " + call.method);
}

void read_calls(config_parse_state& state, const YAML::Node& node, const gateway_config& cfg,
                aggregate_route& route) {
  std::set<std::string> names;
  std::vector<YAML::Node> nodes;  // each call's, for the composition checks' positions
  for (const auto& item : node) {
    call_settings call;
    yaml_reader r(item, state.errors, "call");
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
          if (!declared(route, name) && !names_reference(route, name))
            r.error_at("path", "template names undeclared parameter '" + name + "'");
        }
      } else {
        r.error_at("path", problem);
      }
    }
    if (!sql) read_call_method_and_body(r, route, call);
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
    if (auto h = r.section("headers"))
      read_header_policy(state, *h, "call '" + call.name + "'", policy_owner::call, call.headers);
    if (auto h = r.section("response_headers"))
      read_response_header_policy(state, *h, "call '" + call.name + "'", true, call.response_headers);
    if (!sql) {
      read_passed_answer(r, call.pass);
    } else {
      std::vector<std::string> ignored;
      for (const auto* key : {"pass_status", "pass_headers"}) {
        if (r.string_list(key, ignored))
          r.error_at(key, "a call to a sql downstream has no HTTP status or fields to pass");
      }
    }
    read_call_composition(r, call);
    if (sql && call.for_each) r.error_at("for_each", "a call to a sql downstream cannot run for_each");
    r.finish();
    route.calls.push_back(std::move(call));
    nodes.push_back(item);
  }
  if (route.calls.empty()) yaml_reader::report(state.errors, node, "a route needs at least one call");
  check_composition(state, nodes, route);
}

void read_cors(config_parse_state& state, const YAML::Node& node, const std::string& path,
               aggregate_route& route) {
  yaml_reader r(node, state.errors, "route '" + path + "'.cors");
  if (!r.valid()) return;
  cors_settings c;
  if (r.string_list("allow_origins", c.allow_origins)) {
    for (const auto& o : c.allow_origins) {
      const auto scheme = o.find("://");
      const bool origin = scheme != std::string::npos && scheme > 0 &&
                          o.find_first_of("/?# ", scheme + 3) == std::string::npos && o.size() > scheme + 3;
      if (o != "*" && !origin)
        r.error_at("allow_origins", "'" + o + "' is not an origin like https://shop.example (or '*')");
    }
  }
  if (c.allow_origins.empty())
    r.error_here("cors needs allow_origins (origins like https://shop.example, or '*')");
  const auto tokens = [&](const std::string& key, std::vector<std::string>& out) {
    if (!r.string_list(key, out)) return;
    for (const auto& t : out) {
      if (t.empty() || !char_class::all_of(t, char_class::tchar))
        r.error_at(key, "'" + t + "' is not a token");
    }
  };
  tokens("allow_methods", c.allow_methods);
  tokens("allow_headers", c.allow_headers);
  tokens("expose_headers", c.expose_headers);
  r.boolean("allow_credentials", c.allow_credentials);
  r.duration("max_age", c.max_age, true);
  if (c.allow_credentials &&
      std::find(c.allow_origins.begin(), c.allow_origins.end(), "*") != c.allow_origins.end()) {
    r.error_at(
        "allow_credentials",
        "allow_credentials with allow_origins '*' would let any site read answers made with the user's "
        "cookies: list the origins");
  }
  r.finish();
  route.cors = std::move(c);
}

// A pass-through route's `proxy` section. Its downstream must be HTTP; `rewrite` replaces the matched
// prefix (or the whole path of an exact route) and must be a path itself.
void read_proxy(config_parse_state& state, const YAML::Node& node, const gateway_config& cfg,
                proxy_route& p) {
  yaml_reader r(node, state.errors, "route.proxy");
  if (!r.valid()) return;
  if (r.string("downstream", p.downstream, true)) {
    const auto* target = cfg.find_downstream(p.downstream);
    if (target == nullptr) {
      r.error_at("downstream", "unknown downstream '" + p.downstream + "'");
    } else if (target->kind != downstream_kind::http) {
      r.error_at("downstream", "a proxy route's downstream must be an HTTP downstream");
    } else {
      p.downstream_index = static_cast<std::size_t>(target - cfg.downstreams.data());
    }
  }
  std::string rewrite;
  if (r.string("rewrite", rewrite)) {
    if (rewrite.empty() || rewrite.front() != '/' ||
        rewrite.find_first_of("?# \t\r\n") != std::string::npos ||
        !char_class::all_of(rewrite, char_class::field_text)) {
      r.error_at("rewrite", "rewrite must be a path starting with '/' (no query, fragment or spaces)");
    } else {
      p.rewrite = std::move(rewrite);
    }
  }
  r.duration("timeout", p.timeout);
  r.duration("idle_timeout", p.idle_timeout);
  r.duration("connect_timeout", p.connect_timeout);
  r.size("max_body_bytes", p.max_body_bytes, 0, std::size_t{1} << 50);
  r.size("buffer_bytes", p.buffer_bytes, 1024, 16 * 1024 * 1024);
  r.finish();
}

// What a proxy route cannot have: calls, parameters, answer fields, CORS (the downstream answers for
// itself), a header policy's `forward` (every field goes on already).
void check_proxy_route(yaml_reader& r, const route_settings& route) {
  if (r.mark_of("calls")) r.error_at("calls", "a proxy route has no calls");
  if (!route.pattern.names().empty() || route.pattern.has_catch_all())
    r.error_at("path", "a proxy route's path has no parameters: use path_prefix (with rewrite)");
  for (const char* key : {"params", "response", "response_headers", "cors", "degraded_reason_field",
                          "deadline", "rename", "omit"}) {
    if (r.mark_of(key))
      r.error_at(key, std::string("a proxy route has no ") + key +
                          " (its answer is the downstream's; proxy.timeout bounds it)");
  }
  if (!route.headers.forward.empty())
    r.error_at("headers",
               "a proxy route forwards every client field but hop-by-hop ones: use remove, not forward");
}

bool read_route(config_parse_state& state, const YAML::Node& node, const gateway_config& cfg,
                route_settings& route) {
  yaml_reader r(node, state.errors, "route");
  if (!r.valid()) return false;
  std::string prefix;
  const bool has_path = r.string("path", route.path);
  const bool has_prefix = r.string("path_prefix", prefix);
  std::string problem;
  if (has_path && has_prefix) {
    r.error_at("path_prefix", "a route has either a path or a path_prefix, not both");
  } else if (!r.mark_of("path") && !r.mark_of("path_prefix")) {
    r.error_here("a route needs a path (or a path_prefix)");
  } else if (has_path) {
    if (auto p = route_pattern::parse_path(route.path, problem)) {
      route.pattern = std::move(*p);
    } else {
      r.error_at("path", problem);
    }
  } else if (has_prefix) {
    if (auto p = route_pattern::parse_prefix(prefix, problem)) {
      route.pattern = std::move(*p);
      route.path = prefix;
    } else {
      r.error_at("path_prefix", problem);
    }
  }
  const auto proxy = r.section("proxy");
  if (!r.string("method", route.method)) {
    if (proxy) route.method = "*";
  } else if (proxy) {
    if (route.method.empty() || !char_class::all_of(route.method, char_class::tchar))
      r.error_at("method", "'" + route.method + "' is not a method");
  } else {
    static const std::set<std::string> methods{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"};
    if (!methods.contains(route.method)) r.error_at("method", "unsupported method '" + route.method + "'");
  }
  // An aggregate route's keys are read on a proxy route too, into settings then dropped: a wrong value is
  // reported as on any route, before check_proxy_route says the key has no place there.
  aggregate_route aggregate;
  r.duration("deadline", aggregate.deadline);
  static constexpr std::array<std::string_view, 2> shapes{"array", "object"};
  std::size_t shape = 0;
  if (r.one_of("response", shape, shapes, "response")) {
    aggregate.response = shape == 0 ? response_shape::array : response_shape::object;
  }
  if (r.string("degraded_reason_field", aggregate.degraded_reason_field)) {
    const auto& field = aggregate.degraded_reason_field;
    if (!valid_name(field) || field == "source" || field == "degraded") {
      r.error_at("degraded_reason_field", std::string("degraded_reason_field must be a field name other than "
                                                      "'source' and 'degraded' (") +
                                              name_rule + ")");
    }
  }
  if (auto p = r.section("params")) read_params(state, *p, aggregate);
  add_path_params(route.pattern, aggregate);
  if (auto h = r.section("headers"))
    read_header_policy(state, *h, "route", proxy ? policy_owner::proxy_route : policy_owner::route,
                       route.headers);
  read_route_edge(state, r, route);
  if (proxy) {
    read_proxy(state, *proxy, cfg, route.kind.emplace<proxy_route>());
    check_proxy_route(r, route);
    finish_route_edge(r, route);
    r.finish();
    return true;
  }
  read_route_shaping(r, aggregate.shaping);
  aggregate.verifies_jwt = route.auth && route.auth->jwt;
  if (auto c = r.section("cors")) read_cors(state, *c, route.path, aggregate);
  if (auto h = r.section("response_headers"))
    read_response_header_policy(state, *h, "route", false, aggregate.response_headers);
  if (auto c = r.section("calls", yaml_reader::kind::sequence, true)) read_calls(state, *c, cfg, aggregate);
  for (auto& call : aggregate.calls) {
    call.effective_headers = effective_policy(route.headers, call.headers);
    call.effective_response_headers =
        effective_response_policy(aggregate.response_headers, call.response_headers);
    if (!call.effective_response_headers.empty()) aggregate.passes_response_headers = true;
    if (!call.pass.empty()) aggregate.passes_status = true;
    if (!call.effective_headers.empty()) aggregate.has_header_policy = true;
  }
  route.kind = std::move(aggregate);
  finish_route_edge(r, route);
  r.finish();
  return true;
}

}  // namespace

void read_routes(config_parse_state& state, const YAML::Node& node, gateway_config& cfg) {
  for (const auto& item : node) {
    route_settings route;
    if (!read_route(state, item, cfg, route)) continue;
    // Two routes of one method that match the same paths: the second could never answer.
    // A proxy route of any method ("*") takes every method of its paths.
    const auto clash = std::find_if(cfg.routes.begin(), cfg.routes.end(), [&](const route_settings& other) {
      const bool methods_meet = other.method == route.method || other.method == "*" || route.method == "*";
      return methods_meet && route_pattern::same_paths(other.pattern, route.pattern);
    });
    if (clash != cfg.routes.end()) {
      yaml_reader::report(state.errors, item,
                          clash->path == route.path ? "duplicate route " + route.method + " " + route.path
                                                    : "route " + route.method + " " + route.path +
                                                          " matches the same paths as " + clash->path);
      continue;
    }
    cfg.routes.push_back(std::move(route));
  }
}

}  // namespace gateway
