#include "gateway/aggregate/merge.hpp"

#include "gateway/core/json_text.hpp"

#include <algorithm>
#include <array>
#include <list>
#include <string_view>
#include <unordered_set>

namespace gateway {
namespace {

// Which members of a downstream object go into its entry: not "source" or "degraded" (the gateway's),
// only the allowlisted `fields` when there are some, and for a key given twice only its last occurrence
// (as in any JSON parser that keeps one). Linear in the number of members; no allocation for the usual
// small object whose keys have no escapes.
class kept_members {
 public:
  kept_members(const json_object_text& body, const call_settings& call) {
    const auto& members = body.members;
    const std::size_t n = members.size();
    if (n > small) {
      large_keep_.assign(n, false);
      large_seen_.reserve(n);
    }
    std::array<std::string_view, small> seen;
    std::size_t seen_count = 0;
    for (std::size_t m = n; m-- > 0;) {
      std::string_view key = body.key(members[m]);
      if (members[m].key_escaped) key = decoded_.emplace_back(body.decoded_key(members[m]));
      if (key == "source" || key == "degraded") continue;
      if (!call.fields.empty() && std::find(call.fields.begin(), call.fields.end(), key) == call.fields.end())
        continue;
      if (n > small) {
        large_keep_[m] = large_seen_.insert(key).second;
      } else if (std::find(seen.begin(), seen.begin() + static_cast<std::ptrdiff_t>(seen_count), key) ==
                 seen.begin() + static_cast<std::ptrdiff_t>(seen_count)) {
        seen[seen_count++] = key;
        small_keep_[m] = true;
      }
    }
  }
  bool operator[](std::size_t m) const { return large_keep_.empty() ? small_keep_[m] : bool(large_keep_[m]); }

 private:
  static constexpr std::size_t small = 16;
  std::array<bool, small> small_keep_{};
  std::vector<bool> large_keep_;
  std::unordered_set<std::string_view> large_seen_;
  std::list<std::string> decoded_;  // stable storage for keys that had escapes (rare; empty costs nothing)
};

void append_entry(std::string& out, const call_settings& call, const call_result& result) {
  out += "{\"source\":";
  append_json_string(out, call.name);
  if (result.ok()) {
    const auto& body = result.body;
    const kept_members keep(body, call);
    for (std::size_t m = 0; m < body.members.size(); ++m) {
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
