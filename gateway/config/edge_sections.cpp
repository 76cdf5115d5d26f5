// A route's front door (`auth`, `rate_limit`) and the top-level `redis` store (config/edge_settings.hpp).

#include "gateway/codec/char_class.hpp"
#include "gateway/codec/http_text.hpp"
#include "gateway/codec/owned_fields.hpp"
#include "gateway/config/config_sections.hpp"
#include "gateway/config/config_values.hpp"
#include "gateway/config/yaml_reader.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <set>

namespace gateway {

namespace {

constexpr std::array<std::string_view, 7> jwt_algorithm_names{"RS256", "RS384", "RS512", "PS256",
                                                              "ES256", "ES384", "EdDSA"};

bool header_name(std::string_view name) {
  return !name.empty() && name.size() <= 256 && char_class::all_of(name, char_class::tchar);
}

bool claim_name(std::string_view name) {
  return !name.empty() && name.size() <= 128 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == ':';
  });
}

// `token` / `key`: {header: NAME} or {cookie: NAME}; `bearer` for Authorization's Bearer scheme.
void read_credential_source(config_parse_state& state, yaml_reader& parent, const std::string& key,
                            const std::string& what, credential_source& out) {
  auto node = parent.section(key);
  if (!node) return;
  yaml_reader r(*node, state.errors, what + "." + key);
  std::string header;
  std::string cookie;
  const bool has_header = r.string("header", header);
  const bool has_cookie = r.string("cookie", cookie);
  if (has_header == has_cookie) {
    r.error_here("name either a header or a cookie");
  } else if (has_header) {
    if (!header_name(header)) r.error_at("header", "'" + header + "' is not a header name");
    out.from =
        iequals(header, "authorization") ? credential_source::kind::bearer : credential_source::kind::header;
    out.name = header;
  } else {
    if (!header_name(cookie)) r.error_at("cookie", "'" + cookie + "' is not a cookie name");
    out.from = credential_source::kind::cookie;
    out.name = cookie;
  }
  r.finish();
}

// A header field the gateway writes with who the caller is: never one of its own, and never one a call's
// or a route's policy also forwards or sets (checked by check_edge).
void check_identity_field(yaml_reader& r, const std::string& key, const std::string& name) {
  if (!header_name(name)) {
    r.error_at(key, "'" + name + "' is not a header name");
  } else if (gateway_owned(name)) {
    r.error_at(key, "header '" + name +
                        "' is hop-by-hop, says who the client is, or is written by the "
                        "gateway itself: it cannot carry an identity");
  }
}

void read_jwt(config_parse_state& state, const YAML::Node& node, const std::string& what, jwt_settings& j) {
  yaml_reader r(node, state.errors, what + ".jwt");
  if (!r.valid()) return;
  const bool file = r.string("jwks_file", j.jwks_file);
  const bool fetched = r.string("jwks_url", j.jwks_url);
  if (file == fetched) r.error_here("jwt takes its keys from either jwks_file or jwks_url");
  const auto tls = r.section("jwks_tls");
  if (fetched) {
    // Read as an https downstream would be: host, port, path and TLS settings, the context built now.
    downstream_settings d;
    d.url = j.jwks_url;
    if (auto problem = parse_downstream_url(d); !problem.empty()) {
      r.error_at("jwks_url", problem);
    } else if (!d.tls.enabled) {
      r.error_at("jwks_url", "jwks_url must be https://: keys fetched in plain text could be anyone's");
    } else {
      read_tls(state, tls ? &*tls : nullptr, d, r, "jwks_tls", what + ".jwt.jwks_tls");
      j.jwks_host = d.host;
      j.jwks_port = d.port;
      j.jwks_path = d.base_path.empty() ? "/" : d.base_path;
      j.jwks_tls = std::move(d.tls);
    }
  } else if (tls) {
    r.error_at("jwks_tls", "jwks_tls goes with jwks_url");
  }
  r.duration("refresh", j.refresh);
  r.duration("min_refresh", j.min_refresh);
  r.duration("start_wait", j.start_wait, true);
  r.duration("fetch_timeout", j.fetch_timeout);
  if (r.string_list("algorithms", j.algorithms)) {
    for (const auto& a : j.algorithms) {
      if (std::find(jwt_algorithm_names.begin(), jwt_algorithm_names.end(), a) == jwt_algorithm_names.end())
        r.error_at("algorithms", "'" + a +
                                     "' is not accepted: RS256, RS384, RS512, PS256, ES256, ES384 or "
                                     "EdDSA ('none' and HMAC never are)");
    }
  }
  r.string_list("issuers", j.issuers);
  r.string_list("audiences", j.audiences);
  r.duration("leeway", j.leeway, true);
  if (r.string_list("required_claims", j.required_claims)) {
    for (const auto& c : j.required_claims) {
      if (!claim_name(c)) r.error_at("required_claims", "'" + c + "' is not a claim name");
    }
  }
  if (auto values = r.section("claim_values")) {
    yaml_reader map(*values, state.errors, what + ".jwt.claim_values");
    for (const auto& item : *values) {
      const auto claim = item.first.as<std::string>("");
      std::vector<std::string> wanted;
      std::string one;
      const bool scalar = item.second.IsScalar();
      if (!claim_name(claim)) {
        yaml_reader::report(state.errors, item.first, "'" + claim + "' is not a claim name");
      } else if (scalar ? (!map.string(claim, one) || one.empty())
                        : (!map.string_list(claim, wanted) || wanted.empty())) {
        yaml_reader::report(state.errors, item.second,
                            "claim '" + claim + "' needs a value or a list of them");
      } else {
        if (scalar) wanted.push_back(std::move(one));
        j.claim_values.emplace_back(claim, std::move(wanted));
      }
    }
    map.finish();
  }
  read_credential_source(state, r, "token", what + ".jwt", j.token);
  r.boolean("forward_token", j.forward_token);
  if (auto forward = r.section("forward_claims")) {
    yaml_reader map(*forward, state.errors, what + ".jwt.forward_claims");
    for (const auto& item : *forward) {
      const auto claim = item.first.as<std::string>("");
      std::string field;
      if (!claim_name(claim)) {
        yaml_reader::report(state.errors, item.first, "'" + claim + "' is not a claim name");
      } else if (map.string(claim, field)) {
        check_identity_field(map, claim, field);
        j.forward_claims.emplace_back(claim, field);
      }
    }
    map.finish();
  }
  r.finish();
}

void read_api_key(config_parse_state& state, const YAML::Node& node, const std::string& what,
                  api_key_settings& a) {
  yaml_reader r(node, state.errors, what + ".api_key");
  if (!r.valid()) return;
  std::string header;
  if (r.string("header", header)) {
    if (!header_name(header)) r.error_at("header", "'" + header + "' is not a header name");
    a.key.name = header;
    a.key.from =
        iequals(header, "authorization") ? credential_source::kind::bearer : credential_source::kind::header;
  }
  r.string("keys_file", a.keys_file, true);
  if (r.string("forward_as", a.forward_as)) check_identity_field(r, "forward_as", a.forward_as);
  r.finish();
}

// "100/s", "6000/m", "100000/h", "5/1m" or a number (per second).
bool parse_rate(const std::string& text, double& rate, microseconds& period) {
  const auto slash = text.find('/');
  const auto number = text.substr(0, slash);
  auto [p, ec] = std::from_chars(number.data(), number.data() + number.size(), rate);
  if (ec != std::errc{} || p != number.data() + number.size() || !(rate > 0) || rate > 1e9) return false;
  if (slash == std::string::npos) return true;
  const auto unit = text.substr(slash + 1);
  if (unit == "s") {
    period = std::chrono::seconds(1);
  } else if (unit == "m") {
    period = std::chrono::minutes(1);
  } else if (unit == "h") {
    period = std::chrono::hours(1);
  } else {
    const auto parsed = parse_duration(unit);
    if (!parsed || parsed->count() <= 0) return false;
    period = *parsed;
  }
  return true;
}

void read_rate_limit(config_parse_state& state, const YAML::Node& node, const std::string& what,
                     const route_settings& route, rate_limit_settings& l) {
  yaml_reader r(node, state.errors, what + ".rate_limit");
  if (!r.valid()) return;
  std::string rate;
  if (r.string("rate", rate, true) && !parse_rate(rate, l.rate, l.period))
    r.error_at("rate", "rate must be a number of requests per second, or like 100/s, 6000/m, 5/10s");
  std::size_t burst = 0;
  if (r.size("burst", burst, 1, 1'000'000'000)) l.burst = static_cast<double>(burst);
  std::string key = "client";
  r.string("key", key);
  if (key == "client") {
    l.key = rate_limit_settings::key_kind::client;
  } else if (key == "global") {
    l.key = rate_limit_settings::key_kind::global;
  } else if (key == "api_key") {
    l.key = rate_limit_settings::key_kind::api_key;
    if (!route.auth || !route.auth->api_key) r.error_at("key", "key: api_key needs the route's auth.api_key");
  } else if (key.starts_with("header:") && header_name(key.substr(7))) {
    l.key = rate_limit_settings::key_kind::header;
    l.key_name = key.substr(7);
  } else if (key.starts_with("jwt.") && claim_name(key.substr(4))) {
    l.key = rate_limit_settings::key_kind::claim;
    l.key_name = key.substr(4);
    if (!route.auth || !route.auth->jwt) r.error_at("key", "key: " + key + " needs the route's auth.jwt");
  } else {
    r.error_at("key", "key must be client, global, api_key, header:NAME or jwt.CLAIM");
  }
  l.name = key;
  if (r.string("name", l.name) && (l.name.empty() || !char_class::all_of(l.name, char_class::tchar)))
    r.error_at("name", "a limit's name must be a token (letters, digits, -_.)");
  static constexpr std::array<std::string_view, 2> backends{"local", "redis"};
  std::size_t backend = 0;
  if (r.one_of("backend", backend, backends, "backend")) l.redis = backend == 1;
  if (l.redis && !state.redis_limit_at) state.redis_limit_at = r.mark_of("backend");
  r.size("max_keys", l.max_keys, 1, 100'000'000);
  r.finish();
}

}  // namespace

void read_route_edge(config_parse_state& state, yaml_reader& r, route_settings& route) {
  const std::string what = "route '" + route.path + "'";
  if (auto node = r.section("auth")) {
    yaml_reader a(*node, state.errors, what + ".auth");
    auth_settings auth;
    if (auto j = a.section("jwt")) read_jwt(state, *j, what + ".auth", auth.jwt.emplace());
    if (auto k = a.section("api_key")) read_api_key(state, *k, what + ".auth", auth.api_key.emplace());
    if (auth.jwt && auth.api_key) a.error_here("auth takes jwt or api_key, not both");
    if (!auth.jwt && !auth.api_key) a.error_here("auth needs jwt or api_key");
    a.finish();
    route.auth = std::move(auth);
  }
  if (auto node = r.section("rate_limit", yaml_reader::kind::sequence)) {
    std::set<std::string> names;
    for (const auto& item : *node) {
      rate_limit_settings l;
      read_rate_limit(state, item, what, route, l);
      if (!names.insert(l.name).second)
        yaml_reader::report(state.errors, item, "two limits named '" + l.name + "': give one a name");
      route.rate_limits.push_back(std::move(l));
    }
  }
}

void finish_route_edge(yaml_reader& r, route_settings& route) {
  if (!route.auth) return;
  std::vector<std::string> fields;  // what the gateway writes with who the caller is
  if (route.auth->jwt) {
    for (const auto& [claim, field] : route.auth->jwt->forward_claims) fields.push_back(field);
  }
  if (route.auth->api_key && !route.auth->api_key->forward_as.empty())
    fields.push_back(route.auth->api_key->forward_as);
  const auto clash = [&](const header_policy& p) -> std::string {
    for (const auto& f : fields) {
      const auto named = [&](const std::string& n) { return iequals(n, f); };
      if (std::any_of(p.forward.begin(), p.forward.end(), named) ||
          std::any_of(p.set.begin(), p.set.end(),
                      [&](const header_policy::fixed& x) { return named(x.name); }))
        return f;
    }
    return {};
  };
  std::string field = clash(route.headers);
  if (const auto* aggregate = route.aggregate()) {
    for (const auto& call : aggregate->calls) {
      if (field.empty()) field = clash(call.headers);
    }
  }
  if (!field.empty()) {
    r.error_at("auth", "header '" + field +
                           "' carries the caller's identity, written by the gateway: a header policy may "
                           "not forward or set it");
  }
  // A claim a call's template uses must be in the token: one without it is refused (401), not sent on
  // with an empty value.
  if (auto* aggregate = route.aggregate(); aggregate != nullptr && route.auth->jwt) {
    auto& required = route.auth->jwt->required_claims;
    for (const auto& p : aggregate->params) {
      if (!p.from_identity) continue;
      const auto claim = p.name.substr(4);
      if (std::find(required.begin(), required.end(), claim) == required.end()) required.push_back(claim);
    }
  }
}

void read_redis(config_parse_state& state, const YAML::Node& node, redis_store_settings& s) {
  yaml_reader r(node, state.errors, "redis");
  if (!r.valid()) return;
  s.enabled = true;
  if (r.string("url", s.url, true)) {
    s.url_has_env = r.from_environment("url");
    const bool tls = s.url.starts_with("rediss://");
    if (!tls && !s.url.starts_with("redis://")) {
      r.error_at("url", "url must be redis://[user[:password]@]host[:port][/db] (rediss:// for TLS)");
    }
    s.tls.enabled = tls;
  }
  r.duration("timeout", s.timeout);
  r.duration("connect_timeout", s.connect_timeout);
  r.size("pool", s.pool, 1, 64);
  r.unsigned_int("expected_replicas", s.expected_replicas, 1, 10'000);
  if (r.string("key_prefix", s.key_prefix) && s.key_prefix.size() > 256)
    r.error_at("key_prefix", "key_prefix is at most 256 bytes");
  if (auto t = r.section("tls")) {
    yaml_reader tr(*t, state.errors, "redis.tls");
    if (!s.tls.enabled) tr.error_here("a tls section needs a rediss:// url");
    tr.boolean("verify", s.tls.verify);
    tr.string("ca_file", s.tls.ca_file);
    tr.string("server_name", s.tls.server_name);
    tr.finish();
  }
  r.finish();
}

void check_edge(config_parse_state& state, const gateway_config& cfg) {
  if (state.redis_limit_at && !cfg.redis.enabled) {
    yaml_reader::report(state.errors, *state.redis_limit_at,
                        "a rate_limit with backend: redis needs the top-level redis section");
  }
}

}  // namespace gateway
