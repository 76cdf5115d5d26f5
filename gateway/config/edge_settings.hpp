#pragma once
// The settings of a route's front door: who may call it (`auth`: a JWT or an API key) and how often
// (`rate_limit`), and the Redis store that makes a limit hold across replicas (`redis`). Plain data, read
// by edge_sections.cpp; the checks that run them are built at load (server/edge_gate.hpp).

#include "gateway/runtime/duration.hpp"
#include "gateway/tls/tls_settings.hpp"

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gateway {

// Where a request's credential is read: `Authorization: Bearer <token>` (the default), a named header's
// whole value, or a cookie.
struct credential_source {
  enum class kind : unsigned char { bearer, header, cookie };
  kind from = kind::bearer;
  std::string name = "Authorization";  // the header's or the cookie's name
  bool operator==(const credential_source&) const = default;
};

// `auth.jwt`: a signed JWT (RS256/384/512, PS256, ES256/384, EdDSA), its keys from a JWKS file (read again
// when it changes) or fetched from an https:// URL in the background (auth/jwks_fetcher.hpp): every
// `refresh`, and on a token with an unknown kid at most once per `min_refresh`; a failed fetch keeps the
// last good keys and is tried again after min_refresh. A new configuration waits at most `start_wait`
// for the first keys; until they come, the route answers 503.
struct jwt_settings {
  std::string jwks_file;
  std::string jwks_url;
  std::string jwks_host;  // of jwks_url
  std::uint16_t jwks_port = 443;
  std::string jwks_path;  // of jwks_url: the request target
  tls_settings jwks_tls;  // jwks_url's TLS: ca_file, verify, server_name, cert_file, key_file
  microseconds refresh = std::chrono::minutes(5);
  microseconds min_refresh = std::chrono::seconds(5);
  microseconds start_wait = std::chrono::seconds(2);
  microseconds fetch_timeout = std::chrono::seconds(5);
  std::vector<std::string> algorithms;  // empty: every one above
  std::vector<std::string> issuers;     // empty: not checked
  std::vector<std::string> audiences;   // empty: not checked
  microseconds leeway = std::chrono::seconds(30);
  std::vector<std::string> required_claims;
  std::vector<std::pair<std::string, std::vector<std::string>>> claim_values;  // claim -> each required
  credential_source token;
  bool forward_token = false;  // a pass-through route passes the token on (else it is removed)
  std::vector<std::pair<std::string, std::string>> forward_claims;  // claim -> header field
  bool operator==(const jwt_settings&) const = default;
};

// `auth.api_key`: keys named in `keys_file` by their SHA-256 (hex), one "name digest" per line; the
// key's name is forwarded in `forward_as` (when set) and may key a rate limit.
struct api_key_settings {
  credential_source key{credential_source::kind::header, "X-Api-Key"};
  std::string keys_file;
  std::string forward_as;
  bool operator==(const api_key_settings&) const = default;
};

// Why a route's auth refused a request: the `reason` label of gateway_auth_refusals_total. The JWT's
// reasons first, in auth/jwt.hpp's jwt_failure order (after `none`), then the API key's and the keys'.
inline constexpr std::string_view auth_refusal_labels[] = {
    "missing", "malformed", "algorithm",     "unknown_kid", "bad_signature", "expired", "not_yet_valid",
    "issuer",  "audience",  "missing_claim", "forbidden",   "unknown_key",   "no_keys"};
inline constexpr std::size_t auth_refusal_count = std::size(auth_refusal_labels);

struct auth_settings {
  std::optional<jwt_settings> jwt;
  std::optional<api_key_settings> api_key;
  bool operator==(const auth_settings&) const = default;
};

// One `rate_limit` entry of a route: a token bucket of `burst` tokens filled at `rate` per `period`,
// one per key: the client's address (trusted proxies' X-Forwarded-For honoured), a header's value, the
// API key's name, a JWT claim, or one for the whole route (`global`). A request without its key (no
// header, no claim) shares the bucket of the empty key.
struct rate_limit_settings {
  enum class key_kind : unsigned char { client, header, api_key, claim, global };
  static constexpr std::string_view key_labels[] = {"client", "header", "api_key", "claim", "global"};
  std::string name;  // in metrics and RateLimit fields; default: the key kind
  key_kind key = key_kind::client;
  std::string key_name;  // the header or claim
  double rate = 0;       // tokens per period
  microseconds period = std::chrono::seconds(1);
  double burst = 0;                // the bucket's size; 0: rate
  bool redis = false;              // backend: redis (shared by every replica), else local to the process
  std::size_t max_keys = 100'000;  // local: keys tracked at once; the idle ones go first beyond it
  bool operator==(const rate_limit_settings&) const = default;
  double per_second() const { return rate / std::chrono::duration<double>(period).count(); }
  double bucket() const { return burst > 0 ? burst : rate; }
};

// The Redis store of `backend: redis` limits. While it does not answer within `timeout` (or is down),
// each such limit falls back to a local bucket of rate / expected_replicas.
struct redis_store_settings {
  bool enabled = false;
  std::string url;  // redis://[user[:password]@]host[:port][/db], rediss:// for TLS
  bool url_has_env = false;
  microseconds timeout = milliseconds(20);
  microseconds connect_timeout = std::chrono::seconds(1);
  std::size_t pool = 1;  // connections per I/O thread
  unsigned expected_replicas = 2;
  std::string key_prefix = "gateway:rl:";
  tls_settings tls;  // rediss://: ca_file, verify, server_name
  bool operator==(const redis_store_settings&) const = default;
};

}  // namespace gateway
