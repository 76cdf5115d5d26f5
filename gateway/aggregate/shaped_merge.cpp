// The merge of a route whose answer is shaped (aggregate_route::shaped): a call shaped (target, omit,
// rename, group, flatten), skipped (`when`), or run per element (for_each). merge.cpp keeps the flat
// route's fast path; this one is plain and general, and costs only the routes that ask for it.
//
// One call's members: its answer's (target: the nested object there instead; an answer without it is
// replaced by the fallback, degraded), or its fallback's, which is written as the shaped object already
// wants it (after target); then, on either, the same rules, so a client sees one shape whatever happened:
// `fields` keeps, the route's and then the call's `omit` drop, `rename` (route's, then call's) renames;
// "source" and "degraded" are the gateway's and are dropped; a key given twice keeps its last value.
// Where they go: an entry of the call's own ({"source":..., members..., "degraded":...}); in an object
// response, with `group`, one object shared by the calls of the group (members in call order, "degraded"
// true when any of them is); with `flatten`, the top level. At the top level of an object response a key
// given twice keeps the later one in the route's order (load refuses the collisions it can see).
// A skipped call is left out. A for_each call's entry is {"source":..., "items":[...], "truncated":...,
// "degraded":...}: each element's members and its own "degraded" (and reason field), in element order.

#include "gateway/aggregate/merge.hpp"
#include "gateway/codec/json_text.hpp"

#include <algorithm>
#include <unordered_set>

namespace gateway {

namespace {

struct member_out {
  std::string key;      // decoded, for comparisons
  std::string written;  // the key's text as written between quotes (escaped); empty: write `key`
  std::string value;
};

std::string decoded(const json_object_text& o, const json_member& m) {
  return m.key_escaped ? o.decoded_key(m) : std::string(o.key(m));
}

// Keeps the last of each key, in the order of those last occurrences.
void keep_last(std::vector<member_out>& members) {
  std::unordered_set<std::string> seen;
  std::vector<member_out> kept;
  for (auto it = members.rbegin(); it != members.rend(); ++it) {
    if (seen.insert(it->key).second) kept.push_back(std::move(*it));
  }
  std::reverse(kept.begin(), kept.end());
  members = std::move(kept);
}

bool listed(const std::vector<std::string>& names, std::string_view key) {
  return std::find(names.begin(), names.end(), key) != names.end();
}

const std::string* renamed(const call_shaping& s, std::string_view key) {
  for (const auto& [from, to] : s.rename) {
    if (from == key) return &to;
  }
  return nullptr;
}

// The members of `object` as the call's shaping leaves them.
void shaped_members(const aggregate_route& route, const call_settings& call, const json_object_text& object,
                    std::vector<member_out>& out) {
  for (const auto& m : object.members) {
    member_out o;
    o.key = decoded(object, m);
    if (o.key == "source" || o.key == "degraded") continue;
    if (!call.fields.empty() && !listed(call.fields, o.key)) continue;
    if (listed(route.shaping.omit, o.key) || listed(call.shaping.omit, o.key)) continue;
    o.written = std::string(object.key(m));
    for (const auto* s : {&route.shaping, &call.shaping}) {
      if (const auto* to = renamed(*s, o.key)) {
        o.key = *to;
        o.written.clear();
      }
    }
    o.value = std::string(object.value(m));
    out.push_back(std::move(o));
  }
  keep_last(out);
}

// A call's (or an element's) object: the answer's, targeted, or else the fallback. False: the fallback
// stands in for an answer without the target.
bool entry_members(const aggregate_route& route, const call_settings& call, const call_result& result,
                   std::vector<member_out>& out) {
  if (result.has_body()) {
    if (!call.shaping.target) {
      shaped_members(route, call, result.body, out);
      return true;
    }
    const auto found = find_json(result.body.text, *call.shaping.target);
    json_object_text target;
    if (found.kind == json_kind::object && parse_json_object(std::string(found.text), target)) {
      shaped_members(route, call, target, out);
      return true;
    }
  }
  shaped_members(route, call, call.fallback_object, out);
  return !result.has_body();
}

void write_key(std::string& out, const member_out& m) {
  if (!m.written.empty()) {
    out += '"';
    out += m.written;
    out += '"';
  } else {
    append_json_string(out, m.key);
  }
}

void write_members(std::string& out, const std::vector<member_out>& members, bool comma_first) {
  for (const auto& m : members) {
    if (comma_first) out += ',';
    comma_first = true;
    write_key(out, m);
    out += ':';
    out += m.value;
  }
}

void write_marks(std::string& out, const aggregate_route& route, bool degraded, std::string_view reason) {
  if (degraded && !route.degraded_reason_field.empty()) {
    out += ",\"";
    out += route.degraded_reason_field;
    out += "\":\"";
    out += reason;
    out += '"';
  }
  out += degraded ? ",\"degraded\":true}" : ",\"degraded\":false}";
}

void note_degraded(std::string& list, const std::string& name, std::string_view reason) {
  if (!list.empty()) list += ", ";
  list += name;
  list += ";reason=";
  list += reason;
}

// A for_each call's entry.
std::string items_entry(const aggregate_route& route, const call_settings& call, const call_result& parent,
                        const std::vector<call_result>& results) {
  std::string out = "{\"source\":\"" + call.name + "\",\"items\":[";
  const auto first = call.for_each->first_slot;
  for (std::size_t e = 0; e < parent.items && first + e < results.size(); ++e) {
    const auto& r = results[first + e];
    std::vector<member_out> members;
    const bool degraded = !entry_members(route, call, r, members) || !r.ok();
    if (e > 0) out += ',';
    out += '{';
    write_members(out, members, false);
    std::string marks;  // begins with a comma
    write_marks(marks, route, degraded, to_string(r.ok() ? call_outcome::error : r.outcome));
    out += members.empty() ? marks.substr(1) : marks;
  }
  out += "],\"truncated\":";
  out += parent.truncated ? "true" : "false";
  write_marks(out, route, !parent.ok(), to_string(parent.outcome));
  return out;
}

}  // namespace

merged_response merge_shaped(const aggregate_route& route, const std::vector<call_result>& results) {
  merged_response merged;
  const bool as_object = route.response == response_shape::object;
  const std::size_t n = std::min(route.calls.size(), results.size());
  // The top level: (key, value) in the route's order; an array response ignores the keys.
  std::vector<member_out> top;
  struct group_at {
    std::size_t index;  // in `top`
    std::vector<member_out> members;
    bool degraded = false;
  };
  std::vector<std::pair<std::string, group_at>> groups;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& call = route.calls[i];
    const auto& result = results[i];
    if (result.skipped()) continue;
    if (call.for_each) {
      if (!result.ok()) note_degraded(merged.degraded, call.name, to_string(result.outcome));
      top.push_back({call.name, {}, items_entry(route, call, result, results)});
      continue;
    }
    std::vector<member_out> members;
    const bool answered = entry_members(route, call, result, members);
    const bool degraded = !result.ok() || !answered;
    const auto reason = !result.ok() ? to_string(result.outcome) : std::string_view("target");
    if (degraded) note_degraded(merged.degraded, call.name, reason);
    if (as_object && call.shaping.flatten) {
      for (auto& m : members) top.push_back(std::move(m));
      continue;
    }
    if (as_object && !call.shaping.group.empty()) {
      auto g = std::find_if(groups.begin(), groups.end(),
                            [&](const auto& e) { return e.first == call.shaping.group; });
      if (g == groups.end()) {
        groups.push_back({call.shaping.group, group_at{top.size(), {}, false}});
        top.push_back({call.shaping.group, {}, {}});
        g = groups.end() - 1;
      }
      for (auto& m : members) g->second.members.push_back(std::move(m));
      g->second.degraded = g->second.degraded || degraded;
      continue;
    }
    std::string entry = "{\"source\":\"" + call.name + "\"";
    write_members(entry, members, true);
    write_marks(entry, route, degraded, reason);
    top.push_back({call.name, {}, std::move(entry)});
  }
  for (auto& [name, g] : groups) {
    keep_last(g.members);
    std::string value = "{";
    write_members(value, g.members, false);
    value += g.members.empty() ? (g.degraded ? "\"degraded\":true}" : "\"degraded\":false}")
                               : (g.degraded ? ",\"degraded\":true}" : ",\"degraded\":false}");
    top[g.index].value = std::move(value);
  }
  auto& out = merged.body;
  if (as_object) {
    keep_last(top);
    out = "{";
    write_members(out, top, false);
    out += '}';
  } else {
    out = "[";
    for (std::size_t i = 0; i < top.size(); ++i) {
      if (i > 0) out += ',';
      out += top[i].value;
    }
    out += ']';
  }
  return merged;
}

}  // namespace gateway
