#pragma once
// The alphabet of the names an operator gives (downstreams, calls, routes, parameters): they end up in
// response headers (X-Degraded), logs and metric labels, so they are kept to a safe set.

#include <string_view>

namespace gateway {

inline bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}
inline constexpr const char* name_rule = "must be 1-64 characters of A-Z a-z 0-9 - _ .";

}  // namespace gateway
