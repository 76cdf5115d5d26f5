#include "gateway/aggregate/merge.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <list>
#include <string_view>
#include <unordered_set>

namespace gateway {
namespace {

[[gnu::always_inline]] inline bool gateway_key(std::string_view key) {
  return key == "source" || key == "degraded";
}

// `key` is among the call's `fields` (not empty).
bool listed(const call_settings& call, std::string_view key) {
  return std::find(call.fields.begin(), call.fields.end(), key) != call.fields.end();
}

// Which members of a downstream object go into its entry: not "source" or "degraded" (the gateway's),
// only the allowlisted `fields` when there are some, and for a key given twice only its last occurrence
// (as in any JSON parser that keeps one). Writes one flag per member into `keep`; linear in the number of
// members. This is the general case: large objects, or keys with escapes (compared decoded).
void mark_kept_general(const json_object_text& body, const call_settings& call, std::uint8_t* keep) {
  const auto& members = body.members;
  std::unordered_set<std::string_view> seen;
  seen.reserve(members.size());
  std::list<std::string> decoded;  // stable storage for the keys that had escapes
  for (std::size_t m = members.size(); m-- > 0;) {
    std::string_view key = body.key(members[m]);
    if (members[m].key_escaped) key = decoded.emplace_back(body.decoded_key(members[m]));
    keep[m] = !gateway_key(key) && (call.fields.empty() || listed(call, key)) && seen.insert(key).second;
  }
}

// The same for the usual small object whose keys have no escapes: no allocation, keys compared as they
// are written.
void mark_kept(const json_object_text& body, const call_settings& call, std::uint8_t* keep) {
  constexpr std::size_t small = 16;
  const auto& members = body.members;
  const std::size_t n = members.size();
  if (n > small ||
      std::any_of(members.begin(), members.end(), [](const json_member& m) { return m.key_escaped; })) {
    return mark_kept_general(body, call, keep);
  }
  const bool filtered = !call.fields.empty();
  std::uint8_t seen[small];  // indices of the kept members so far
  std::size_t seen_count = 0;
  for (std::size_t m = n; m-- > 0;) {
    keep[m] = 0;
    const std::string_view key = body.key(members[m]);
    if (gateway_key(key) || (filtered && !listed(call, key))) continue;
    bool repeated = false;
    for (std::size_t k = 0; k < seen_count && !repeated; ++k) repeated = body.key(members[seen[k]]) == key;
    if (!repeated) {
      seen[seen_count++] = static_cast<std::uint8_t>(m);
      keep[m] = 1;
    }
  }
}

// The body is sized first and then written in place: one allocation and no per-piece append.
class writer {
 public:
  explicit writer(char* p) : p_(p) {}
  void put(char c) { *p_++ = c; }
  void put(std::string_view s) {
    std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
  }
  char* end() const { return p_; }

 private:
  char* p_;
};

// The member is written "key":value, with nothing between key and value but the colon: its text is
// what pass 2 writes for it.
bool compact(const json_member& m) {
  return m.value_pos == m.key_pos + m.key_len + 2;
}
std::uint32_t end_of(const json_member& m) {
  return m.value_pos + m.value_len;
}

constexpr std::string_view source_prefix = "{\"source\":";
constexpr std::string_view ok_suffix = ",\"degraded\":false}";
constexpr std::string_view degraded_suffix = ",\"degraded\":true}";

}  // namespace

merged_response merge_results(const aggregate_route& route, const std::vector<call_result>& results) {
  if (route.shaped) return merge_shaped(route, results);
  merged_response merged;
  const std::size_t n = std::min(route.calls.size(), results.size());
  const bool as_object = route.response == response_shape::object;

  // Pass 1: which members stay, and the exact size. Call names are written as they are: the configuration
  // allows only A-Z a-z 0-9 - _ . in them.
  thread_local std::vector<std::uint8_t> flags;  // per member of every answer: kept or not
  std::size_t total_members = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (results[i].has_body()) total_members += results[i].body.members.size();
  }
  flags.resize(total_members);
  std::size_t size = 2 + (n > 0 ? n - 1 : 0);  // brackets and commas
  std::size_t flag_at = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& call = route.calls[i];
    const std::size_t name_size = call.name.size() + 2;
    size += source_prefix.size() + name_size;
    if (as_object) size += name_size + 1;
    const auto& result = results[i];
    if (result.has_body()) {
      const auto& body = result.body;
      std::uint8_t* keep = flags.data() + flag_at;
      mark_kept(body, call, keep);
      for (std::size_t m = 0; m < body.members.size(); ++m) {
        if (keep[m]) size += 4 + body.members[m].key_len + body.members[m].value_len;  // ,"key":value
      }
      flag_at += body.members.size();
    } else if (!call.fallback_members.empty()) {
      size += 1 + call.fallback_members.size();
    }
    if (result.ok()) {
      size += ok_suffix.size();
    } else {
      size += degraded_suffix.size();
      const auto reason = to_string(result.outcome);
      if (!route.degraded_reason_field.empty())
        size += route.degraded_reason_field.size() + reason.size() + 6;
      if (!merged.degraded.empty()) merged.degraded += ", ";
      merged.degraded += call.name;
      merged.degraded += ";reason=";
      merged.degraded += reason;
    }
  }

  // Pass 2: write.
  std::string& out = merged.body;
  out.resize(size);
  writer w(out.data());
  w.put(as_object ? '{' : '[');
  flag_at = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& call = route.calls[i];
    const auto& result = results[i];
    if (i > 0) w.put(',');
    const auto put_name = [&] {
      w.put('"');
      w.put(call.name);
      w.put('"');
    };
    if (as_object) {
      put_name();
      w.put(':');
    }
    w.put(source_prefix);
    put_name();
    if (result.has_body()) {
      const auto& body = result.body;
      const std::uint8_t* keep = flags.data() + flag_at;
      const auto& members = body.members;
      for (std::size_t m = 0; m < members.size(); ++m) {
        if (!keep[m]) continue;
        w.put(',');
        if (!compact(members[m])) {
          w.put('"');
          w.put(body.key(members[m]));
          w.put('"');
          w.put(':');
          w.put(body.value(members[m]));
          continue;
        }
        // A run of kept members written as ,"key":value with nothing between them: one copy.
        const std::size_t first = m;
        while (m + 1 < members.size() && keep[m + 1] && compact(members[m + 1]) &&
               members[m + 1].key_pos == end_of(members[m]) + 2) {
          ++m;
        }
        w.put(std::string_view(body.text).substr(members[first].key_pos - 1,
                                                 end_of(members[m]) - (members[first].key_pos - 1)));
      }
      flag_at += members.size();
    } else if (!call.fallback_members.empty()) {
      w.put(',');
      w.put(call.fallback_members);
    }
    if (result.ok()) {
      w.put(ok_suffix);
    } else {
      if (!route.degraded_reason_field.empty()) {  // ,"reason":"timeout"
        w.put(",\"");
        w.put(route.degraded_reason_field);
        w.put("\":\"");
        w.put(to_string(result.outcome));
        w.put('"');
      }
      w.put(degraded_suffix);
    }
  }
  w.put(as_object ? '}' : ']');
  out.resize(static_cast<std::size_t>(w.end() - out.data()));  // equal to `size`; a shrink at most
  return merged;
}

}  // namespace gateway
