#pragma once
// The list of degraded calls as X-Degraded carries it, written by merge_results: each call's name with
// why it was degraded (a call_outcome), in call order, e.g. "coupon;reason=timeout, pricing;reason=error".
// Call names and outcomes hold no ',', ';' or space. Pure.

#include <string>
#include <string_view>

namespace gateway {

// Calls `fn(name, reason)` for every element of `list`.
template <class Fn>
void for_each_degraded(std::string_view list, Fn&& fn) {
  while (!list.empty()) {
    const auto comma = list.find(',');
    auto element = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    while (!element.empty() && element.front() == ' ') element.remove_prefix(1);
    const auto semicolon = element.find(';');
    std::string_view reason;
    if (semicolon != std::string_view::npos) {
      reason = element.substr(semicolon + 1);
      if (reason.starts_with("reason=")) reason.remove_prefix(7);
    }
    fn(element.substr(0, semicolon), reason);
  }
}

// The names alone, joined by ',' ("coupon,pricing"): what the access log and tools show.
inline std::string degraded_names(std::string_view list) {
  std::string names;
  for_each_degraded(list, [&](std::string_view name, std::string_view) {
    if (!names.empty()) names += ',';
    names += name;
  });
  return names;
}

}  // namespace gateway
