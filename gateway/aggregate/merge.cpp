#include "gateway/aggregate/merge.hpp"

#include <algorithm>

namespace gateway {
namespace {

void append_json_string(std::string& out, const std::string& text) {
  out += nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void append_entry(std::string& out, const call_settings& call, const call_result& result) {
  out += "{\"source\":";
  append_json_string(out, call.name);
  if (result.ok()) {
    for (const auto& [key, value] : result.body.items()) {
      if (key == "source" || key == "degraded") continue;
      if (!call.fields.empty() &&
          std::find(call.fields.begin(), call.fields.end(), key) == call.fields.end()) {
        continue;
      }
      out += ',';
      append_json_string(out, key);
      out += ':';
      out += value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
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
