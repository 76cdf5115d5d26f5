// A `headers` section of a route or a call (header_policy), a call's effective policy, and the server's
// forwarded style and trusted proxies.

#include "gateway/codec/char_class.hpp"
#include "gateway/codec/http_text.hpp"
#include "gateway/codec/owned_fields.hpp"
#include "gateway/config/config_sections.hpp"
#include "gateway/config/config_values.hpp"
#include "gateway/config/yaml_reader.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>

namespace gateway {

namespace {

constexpr std::size_t max_fixed_value = 8 * 1024;

// What a pass-through route's policy may not set: the gateway writes Host and the trace context on a
// pass-through request itself (and answers Expect), but not the Accept, Accept-Encoding or Content-Type
// it writes on an aggregate call, nor X-Request-Timeout-Ms (server/proxy_exchange.cpp).
constexpr std::string_view proxy_written_fields[] = {"host", "expect", "traceparent", "tracestate"};

// Whether a policy of `owner` may not forward or set `name`: on a call (an aggregate route's policy is
// its calls'), every field the gateway owns (core/owned_fields.hpp); on a pass-through route, the
// framing, identity fields and what the gateway writes on its requests.
bool reserved(std::string_view name, policy_owner owner) {
  if (owner != policy_owner::proxy_route) return gateway_owned(name);
  return listed_ci(name, hop_by_hop_fields) || identity_field(name) || listed_ci(name, proxy_written_fields);
}

bool contains_name(const std::vector<std::string>& names, std::string_view name) {
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return iequals(n, name); });
}

// The problem with `name` as a header a policy of `owner` may name, or "". `removed`: in a remove list,
// where any name is fine.
std::string name_problem(std::string_view name, policy_owner owner, bool removed) {
  if (name.empty() || name.size() > 256 || !char_class::all_of(name, char_class::tchar))
    return "'" + std::string(name) + "' is not a header name";
  if (!removed && reserved(name, owner))
    return "header '" + std::string(name) +
           "' is hop-by-hop, says who the client is, or is written by the gateway itself: it cannot be "
           "forwarded or set";
  return {};
}

}  // namespace

void read_header_policy(config_parse_state& state, const YAML::Node& node, const std::string& what,
                        policy_owner owner, header_policy& out) {
  yaml_reader r(node, state.errors, what + ".headers");
  if (!r.valid()) return;
  if (r.string_list("forward", out.forward)) {
    for (const auto& name : out.forward) {
      if (auto problem = name_problem(name, owner, false); !problem.empty()) r.error_at("forward", problem);
    }
  }
  nlohmann::json set = nlohmann::json::object();
  if (r.json_object("set", set)) {
    for (const auto& [name, value] : set.items()) {
      if (auto problem = name_problem(name, owner, false); !problem.empty()) {
        r.error_at("set", problem);
        continue;
      }
      if (!value.is_string()) {
        r.error_at("set", "the value of header '" + name + "' must be a string");
        continue;
      }
      header_policy::fixed f;
      f.name = name;
      bool from_env = false;
      std::string problem;
      if (!substitute_env(value.get<std::string>(), f.value, from_env, problem)) {
        r.error_at("set", "header '" + name + "': " + problem);
        continue;
      }
      if (f.value.size() > max_fixed_value || !char_class::all_of(f.value, char_class::field_text)) {
        r.error_at("set", "the value of header '" + name +
                              "' must be at most 8 KiB of text without CR, LF, NUL or other controls");
        continue;
      }
      f.secret = from_env || credential_name(name);
      out.set.push_back(std::move(f));
    }
  }
  if (owner != policy_owner::route) {
    if (r.string_list("remove", out.remove)) {
      for (const auto& name : out.remove) {
        if (auto problem = name_problem(name, owner, true); !problem.empty()) r.error_at("remove", problem);
      }
    }
  }
  r.finish();
}

header_policy effective_policy(const header_policy& route, const header_policy& call) {
  header_policy out;
  out.remove = call.remove;
  const auto kept = [&](std::string_view name) { return !contains_name(call.remove, name); };
  for (const auto& name : route.forward) {
    if (kept(name)) out.forward.push_back(name);
  }
  for (const auto& name : call.forward) {
    if (!contains_name(out.forward, name)) out.forward.push_back(name);
  }
  for (const auto& f : route.set) {
    const bool replaced = std::any_of(call.set.begin(), call.set.end(),
                                      [&](const header_policy::fixed& c) { return iequals(c.name, f.name); });
    if (kept(f.name) && !replaced) out.set.push_back(f);
  }
  out.set.insert(out.set.end(), call.set.begin(), call.set.end());
  return out;
}

void read_forwarding(yaml_reader& r, server_settings& s) {
  static constexpr std::array<std::string_view, 3> styles{"x-forwarded", "forwarded", "none"};
  std::size_t style = 0;
  if (r.one_of("forwarded", style, styles, "forwarded")) s.forwarded = static_cast<forwarded_style>(style);
  std::vector<std::string> proxies;
  if (r.string_list("trusted_proxies", proxies)) {
    for (const auto& text : proxies) {
      std::string problem;
      if (auto n = ip_network::parse(text, problem)) {
        s.trusted_proxies.push_back(std::move(*n));
      } else {
        r.error_at("trusted_proxies", problem);
      }
    }
  }
}

}  // namespace gateway
