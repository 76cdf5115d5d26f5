// A `response_headers` section of a route or a call (response_header_policy), and a call's effective
// policy: which fields of the calls' answers reach the client's answer; a call's `pass_status` and
// `pass_headers` (passed_answer_policy): the answers that become the client's whole answer.

#include "gateway/codec/char_class.hpp"
#include "gateway/codec/http_text.hpp"
#include "gateway/config/config_sections.hpp"
#include "gateway/config/config_values.hpp"
#include "gateway/config/yaml_reader.hpp"

#include <algorithm>
#include <array>
#include <charconv>

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

// The fields of a passed answer the gateway writes itself (the client's answer is the gateway's message:
// its own type, coding and ids), besides the framing and hop-by-hop fields (lower-case). Retry-After is
// not among them: the gateway writes its own only on its own 503s.
constexpr std::string_view refused_pass_names[] = {
    "proxy-authenticate", "content-type", "content-encoding", "x-request-id", "x-degraded", "vary", "allow",
    "set-cookie"};

// The problem with `name` in `pass_headers`, or "".
std::string pass_header_problem(std::string_view name) {
  const std::string quoted = "'" + std::string(name) + "'";
  if (name.empty() || name.size() > 256 || !char_class::all_of(name, char_class::tchar))
    return quoted + " is not a header name";
  if (listed_ci(name, hop_by_hop_fields))
    return "header " + quoted + " is hop-by-hop or framing (it describes the downstream's connection, not " +
           "its answer): it cannot be passed";
  if (starts_with_ci(name, "access-control-") || listed_ci(name, refused_pass_names))
    return "header " + quoted + " is written by the gateway itself on every answer: it cannot be passed";
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

void read_passed_answer(yaml_reader& r, passed_answer_policy& out) {
  std::vector<std::string> statuses;
  if (r.string_list("pass_status", statuses)) {
    for (const auto& text : statuses) {
      // A 1xx-3xx is no answer to pass: an interim answer is skipped, a 2xx merged, a 3xx not followed.
      const auto status = parse_status_code(text, 400, 599);
      if (!status) {
        r.error_at("pass_status", "pass_status must list statuses from 400 to 599, not '" + text + "'");
        return;
      }
      if (out.passes(*status)) {
        r.error_at("pass_status", "pass_status lists " + text + " twice");
        return;
      }
      out.statuses.push_back(*status);
    }
  }
  std::vector<std::string> names;
  if (!r.string_list("pass_headers", names)) return;
  for (const auto& name : names) {
    if (auto problem = pass_header_problem(name); !problem.empty()) {
      r.error_at("pass_headers", problem);
    } else if (iequals(name, "cache-control")) {
      out.fields.cache_control = true;  // keep_answer_field() keeps it by this flag, not by `forward`
    } else {
      add_unique(out.fields.forward, name, true);
    }
  }
  if (out.statuses.empty() && !out.fields.empty())
    r.error_at("pass_headers", "pass_headers without pass_status: no answer would carry these fields");
}

}  // namespace gateway
