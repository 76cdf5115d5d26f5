#include "gateway/aggregate/merge.hpp"

#include <algorithm>
#include <list>
#include <string_view>
#include <unordered_set>

#include <nlohmann/json.hpp>

namespace gateway {
namespace {

void append_json_string(std::string& out, const std::string& text) {
  const bool plain = std::all_of(text.begin(), text.end(),
                                 [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
  if (plain) {
    out += '"';
    out += text;
    out += '"';
    return;
  }
  out += nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Which members of a downstream object go into its entry: not "source" or "degraded" (the gateway's),
// only the allowlisted `fields` when there are some, and for a key given twice only its last occurrence
// (as in any JSON parser that keeps one). Linear in the number of members.
std::vector<bool> members_to_keep(const json_object_text& body, const call_settings& call) {
  const auto& members = body.members;
  std::vector<bool> keep(members.size(), false);
  std::list<std::string> decoded;  // stable storage for keys that had escapes (rare; empty costs nothing)
  std::vector<std::string_view> seen;
  std::unordered_set<std::string_view> seen_many;  // used instead of `seen` for large objects
  const bool many = members.size() > 16;
  for (std::size_t m = members.size(); m-- > 0;) {
    std::string_view key = body.key(members[m]);
    if (members[m].key_escaped) key = decoded.emplace_back(body.decoded_key(members[m]));
    if (key == "source" || key == "degraded") continue;
    if (!call.fields.empty() && std::find(call.fields.begin(), call.fields.end(), key) == call.fields.end())
      continue;
    if (many) {
      keep[m] = seen_many.insert(key).second;
    } else if (std::find(seen.begin(), seen.end(), key) == seen.end()) {
      seen.push_back(key);
      keep[m] = true;
    }
  }
  return keep;
}

void append_entry(std::string& out, const call_settings& call, const call_result& result) {
  out += "{\"source\":";
  append_json_string(out, call.name);
  if (result.ok()) {
    const auto& body = result.body;
    const auto keep = members_to_keep(body, call);
    for (std::size_t m = 0; m < keep.size(); ++m) {
      if (!keep[m]) continue;
      out += ",\"";
      out += body.key(body.members[m]);
      out += "\":";
      out += body.value(body.members[m]);
    }
    out += ",\"degraded\":false}";
  } else {
    if (!call.fallback_members.empty()) {
      out += ',';
      out += call.fallback_members;
    }
    out += ",\"degraded\":true}";
  }
}

}  // namespace

merged_response merge_results(const route_settings& route, const std::vector<call_result>& results) {
  merged_response merged;
  std::string& out = merged.body;
  out.reserve(128 * results.size());
  const bool as_object = route.response == response_shape::object;
  out += as_object ? '{' : '[';
  for (std::size_t i = 0; i < route.calls.size() && i < results.size(); ++i) {
    const auto& call = route.calls[i];
    if (i > 0) out += ',';
    if (as_object) {
      append_json_string(out, call.name);
      out += ':';
    }
    append_entry(out, call, results[i]);
    if (!results[i].ok()) {
      if (!merged.degraded.empty()) merged.degraded += ',';
      merged.degraded += call.name;
    }
  }
  out += as_object ? '}' : ']';
  return merged;
}

}  // namespace gateway
