// A `response_headers` section of a route or a call (response_header_policy), and a call's effective
// policy: which fields of the calls' answers reach the client's answer.

#include "gateway/config/config_sections.hpp"
#include "gateway/config/yaml_reader.hpp"
#include "gateway/core/char_class.hpp"
#include "gateway/core/http_text.hpp"

#include <algorithm>
#include <array>

namespace gateway {

namespace {

// Never copied from an answer by `forward`: hop-by-hop fields (RFC 9110 7.6.1), the framing and the
// representation's metadata (the client's body is the merged one, not any downstream's: its type, coding,
// range, digests and validators would be wrong for it), freshness (Cache-Control has its own key, and
// Expires and Age would contradict the combined value), and what the gateway writes itself.
constexpr std::string_view refused_names[] = {"proxy-authenticate",
                                              "content-type",
                                              "content-encoding",
                                              "content-range",
                                              "content-md5",
                                              "digest",
                                              "content-digest",
                                              "repr-digest",
                                              "etag",
                                              "last-modified",
                                              "expires",
                                              "age",
                                              "vary",
                                              "x-request-id",
                                              "x-degraded",
                                              "allow",
                                              "retry-after"};

bool starts_with_ci(std::string_view name, std::string_view prefix) {
  return name.size() >= prefix.size() && iequals(name.substr(0, prefix.size()), prefix);
}

// The problem with `name` in `forward`, or "".
std::string forward_problem(std::string_view name) {
  const std::string quoted = "'" + std::string(name) + "'";
  if (name.empty() || name.size() > 256 || !char_class::all_of(name, char_class::tchar))
    return quoted + " is not a header name";
  if (iequals(name, "cache-control"))
    return "Cache-Control is combined by 'cache_control: true', not forwarded";
  if (iequals(name, "set-cookie"))
    return "Set-Cookie is passed on by cookie name with 'set_cookie', not forwarded";
  if (starts_with_ci(name, "access-control-") || listed_ci(name, hop_by_hop_fields) ||
      listed_ci(name, refused_names))
    return "header " + quoted +
           " is hop-by-hop, describes a downstream's body, or is written by the gateway itself: it cannot be "
           "forwarded";
  return {};
}

void add_unique(std::vector<std::string>& to, const std::string& name, bool ignore_case) {
  const bool there = std::any_of(
      to.begin(), to.end(), [&](const std::string& n) { return ignore_case ? iequals(n, name) : n == name; });
  if (!there) to.push_back(name);
}

}  // namespace

void read_response_header_policy(config_parse_state& state, const YAML::Node& node, const std::string& what,
                                 bool call, response_header_policy& out) {
  yaml_reader r(node, state.errors, what + ".response_headers");
  if (!r.valid()) return;
  std::vector<std::string> names;
  if (r.string_list("forward", names)) {
    for (const auto& name : names) {
      if (auto problem = forward_problem(name); !problem.empty()) {
        r.error_at("forward", problem);
      } else {
        add_unique(out.forward, name, true);
      }
    }
  }
  names.clear();
  if (r.string_list("set_cookie", names)) {
    for (const auto& name : names) {
      // A cookie name is a token (RFC 6265 4.1.1).
      if (name.empty() || name.size() > 256 || !char_class::all_of(name, char_class::tchar)) {
        r.error_at("set_cookie", "'" + name + "' is not a cookie name");
      } else {
        add_unique(out.set_cookie, name, false);
      }
    }
  }
  // The answer's Cache-Control is the route's to combine, from every call: a call cannot ask alone.
  if (!call) r.boolean("cache_control", out.cache_control);
  r.finish();
}

response_header_policy effective_response_policy(const response_header_policy& route,
                                                 const response_header_policy& call) {
  response_header_policy out = route;
  for (const auto& name : call.forward) add_unique(out.forward, name, true);
  for (const auto& name : call.set_cookie) add_unique(out.set_cookie, name, false);
  return out;
}

}  // namespace gateway
