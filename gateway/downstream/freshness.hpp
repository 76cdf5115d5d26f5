#pragma once
// How long a downstream's answer may be served from a cache, from its Cache-Control field (RFC 9111,
// as a shared cache reads it), and whether its Vary field lets it be shared at all. Pure.

#include <cstdint>
#include <optional>
#include <string_view>

namespace gateway {

// Seconds: s-maxage, else max-age (at most a day); 0 with no-store, no-cache or private; nullopt when
// the value says neither.
std::optional<std::uint32_t> freshness_seconds(std::string_view cache_control);

// Whether an answer with this Vary field value depends on more than the key it would be shared under
// (share_key.hpp): "*", or a field the key leaves out because the gateway writes it anew on every request
// (core/owned_fields.hpp, per_request_fields). A field the gateway never sends is absent from every call,
// and one it sends is in the key: varying on either splits nothing the key does not.
bool varies_beyond_key(std::string_view vary);

}  // namespace gateway
