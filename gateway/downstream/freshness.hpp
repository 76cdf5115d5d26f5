#pragma once
// How long a downstream's answer may be served from a cache, from its Cache-Control field (RFC 9111,
// as a shared cache reads it). Pure.

#include <cstdint>
#include <optional>
#include <string_view>

namespace gateway {

// Seconds: s-maxage, else max-age (at most a day); 0 with no-store, no-cache or private; nullopt when
// the value says neither.
std::optional<std::uint32_t> freshness_seconds(std::string_view cache_control);

}  // namespace gateway
