#include "gateway/auth/verified_tokens.hpp"

#include "gateway/auth/unix_seconds.hpp"

#include <algorithm>
#include <functional>
#include <limits>

namespace gateway {
namespace {

constexpr auto int64_min = std::numeric_limits<std::int64_t>::min();
constexpr auto int64_max = std::numeric_limits<std::int64_t>::max();

}  // namespace

verified_tokens::verified_tokens(std::size_t capacity, std::chrono::seconds leeway)
    : slots_(std::max<std::size_t>(capacity, 1)), leeway_(static_cast<std::int64_t>(leeway.count())) {}

verified_tokens::slot& verified_tokens::slot_of(std::string_view token) {
  return slots_[std::hash<std::string_view>{}(token) % slots_.size()];
}

const cached_token* verified_tokens::find(std::string_view token, const jwk_set& keys, std::int64_t now) {
  auto& s = slot_of(token);
  if (s.generation != keys.generation() || s.token != token) return nullptr;
  // The same test as verify_jwt's: expired when now > exp + leeway, not yet valid when now + leeway < nbf.
  if (now > s.valid_until || now < s.valid_from) {
    s.generation = 0;
    return nullptr;
  }
  return &s.value;
}

void verified_tokens::insert(std::string_view token, const jwk_set& keys, const jwt_verdict& verdict) {
  if (verdict.failure != jwt_failure::none) return;
  auto& s = slot_of(token);
  s.token.assign(token);  // keeps the string's capacity from the entry it replaces
  s.generation = keys.generation();
  // expires and not_before are 0 when the token has no exp or nbf.
  s.valid_until = verdict.expires != 0 ? saturating_add(verdict.expires, leeway_) : int64_max;
  s.valid_from = verdict.not_before != 0 ? saturating_add(verdict.not_before, -leeway_) : int64_min;
  s.value.expires = verdict.expires;
  s.value.claims = verdict.claims;
}

}  // namespace gateway
