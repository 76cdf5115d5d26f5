#pragma once
// A small cache of tokens that verified, so that a client sending the same token again costs a lookup
// instead of a signature check (tens of microseconds for RS256, more for ES256).
//
// Ownership and threads: one instance per I/O thread and per route, owned by whoever owns that route's
// per-thread state, used only on that thread (no locks). The cache belongs to one set of rules and one
// list of wanted claims, those of its route: the caller must not share an instance between routes, and
// makes a new one when the route's rules change. Entries are bound to the key set they verified against
// (by its generation), so a new JWKS makes every older entry miss.
//
// Only accepted tokens are inserted: refused ones always go through verify_jwt, so a flood of bad tokens
// cannot push good ones out. A hit checks the time window again (exp and nbf, with the rules' leeway): a
// token that has expired since is dropped and reported as a miss, and verifying it again refuses it.

#include "gateway/auth/jwk_set.hpp"
#include "gateway/auth/jwt.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gateway {

// What a hit gives back: the accepted verdict's expiry and wanted claims.
struct cached_token {
  std::int64_t expires = 0;         // as jwt_verdict::expires (0: no exp)
  std::vector<std::string> claims;  // as jwt_verdict::claims
};

class verified_tokens {
 public:
  // A table of `capacity` entries (at least 1), each kept until a token of the same slot replaces it (the
  // slot is chosen by the token's hash: direct-mapped). `leeway` is the route's rules.leeway. Memory: up to
  // `capacity` tokens of max_jwt_size bytes each, and their claims.
  verified_tokens(std::size_t capacity, std::chrono::seconds leeway);

  // The entry of `token` verified against `keys`, when it is still within its time window at `now`;
  // otherwise null (a token found outside its window is dropped). The pointer is valid until the next call
  // to insert.
  const cached_token* find(std::string_view token, const jwk_set& keys, std::int64_t now);

  // Keeps an accepted `verdict` of `token` against `keys`, replacing what its slot held. A refused verdict
  // is ignored.
  void insert(std::string_view token, const jwk_set& keys, const jwt_verdict& verdict);

  std::size_t capacity() const { return slots_.size(); }

 private:
  struct slot {
    std::string token;             // the whole token, compared in full
    std::uint64_t generation = 0;  // of the key set it verified against; 0: empty slot
    std::int64_t valid_from = 0;   // nbf - leeway, saturated
    std::int64_t valid_until = 0;  // exp + leeway, saturated
    cached_token value;
  };

  slot& slot_of(std::string_view token);

  std::vector<slot> slots_;
  std::int64_t leeway_;
};

}  // namespace gateway
