#pragma once
// A route's front door, built at load for each route with `auth` or `rate_limit` (a route with neither
// has none, and its requests pay nothing): who the caller is (a verified JWT or a known API key), then
// whether the caller's limits admit the request. It runs once per request, from its head, before any
// body is read or any downstream is called.
//
// Refusals are the gateway's own JSON errors: 401 with WWW-Authenticate (RFC 6750) for a missing or
// invalid credential, 403 for a valid token without a required claim value, 429 with Retry-After and the
// RateLimit fields when a limit is spent, 503 when the route's keys are not there yet. An admitted
// request takes its identity along (edge_pass): the fields every downstream request of it carries
// (forward_claims, api_key.forward_as), the values of its "{jwt.claim}" parameters, and its answer's
// RateLimit fields. A credential never reaches a log or a metric label.
//
// Threads: check() runs on any I/O thread, `thread` being its index (the per-thread key caches);
// a gate is immutable once built, like the generation that owns it.

#include "gateway/auth/api_keys.hpp"
#include "gateway/auth/jwks_fetcher.hpp"
#include "gateway/auth/jwt.hpp"
#include "gateway/auth/key_file.hpp"
#include "gateway/auth/verified_tokens.hpp"
#include "gateway/config/config.hpp"
#include "gateway/downstream/call_headers.hpp"
#include "gateway/limit/local_limiter.hpp"
#include "gateway/limit/redis_limiter.hpp"
#include "gateway/observe/metrics.hpp"
#include "gateway/server/request_handler.hpp"

#include <boost/container/small_vector.hpp>

#include <memory>
#include <string>
#include <vector>

namespace gateway {

// What an admitted request carries on.
struct edge_pass {
  std::string fields;  // "\r\nName: value" each, on every downstream request
  boost::container::small_vector<std::pair<std::size_t, std::string>, 2> params;  // (route param, value)
  std::string answer_fields;  // "Name: value\r\n" each: RateLimit-Policy and RateLimit
};

// The key sets the gates of one generation read, shared between routes naming the same file or URL, and
// the rate limits' buckets. A JWKS fetched from a URL, and a limit's buckets, are kept from the previous
// generation when their settings are the same (a reload neither fetches and waits again nor refills
// every bucket).
struct edge_keys {
  std::vector<std::shared_ptr<key_file<jwk_set>>> jwks;
  std::vector<std::shared_ptr<key_file<api_key_set>>> api_keys;
  std::vector<std::pair<jwt_settings, std::shared_ptr<jwks_fetcher>>> fetched;  // jwks_url, by settings
  std::vector<std::pair<std::string, std::shared_ptr<local_limiter>>>
      buckets;                          // rate limits', by route+limit
  const edge_keys* previous = nullptr;  // while the generation is built: where fetchers may be kept from
  // Reads every file again (the housekeeping thread).
  void check() const;
};

class edge_gate {
 public:
  // Throws std::runtime_error when a key file cannot be read at load. `redis` (the server's, for limits
  // with backend: redis; null when the configuration has no redis section) outlives the gate.
  edge_gate(const route_settings& route, std::size_t route_index, edge_keys& keys, std::size_t threads,
            const metric_set& series, redis_limiter* redis, const redis_store_settings& store);
  edge_gate(const edge_gate&) = delete;
  edge_gate& operator=(const edge_gate&) = delete;
  ~edge_gate();

  // Status 0 when admitted (then `pass` is filled); otherwise the refusal to send. `client` is the
  // client's address as the gateway trusts it (a trusted proxy's X-Forwarded-For honoured); `incoming_id`
  // the request's X-Request-Id (make_request_id).
  // A limit with backend: redis asks Redis within the store's timeout (and `deadline`, the request's
  // own), suspending the request's coroutine (`yield`); when Redis does not answer in time or is down,
  // the limit's local fallback bucket (rate / expected_replicas) decides instead.
  outbound_response check(const client_headers& headers, std::string_view client,
                          std::string_view incoming_id, std::size_t thread, clock::time_point now,
                          clock::time_point deadline, boost::asio::yield_context yield,
                          edge_pass& pass) const;

  // The client fields a pass-through request must not pass on: the identity fields the gateway writes,
  // and the credential unless jwt.forward_token.
  bool drops(std::string_view name) const;

 private:
  struct limit;
  struct request_facts {
    const client_headers& headers;
    std::string_view incoming_id;
    std::size_t thread;
  };
  outbound_response authenticate(const request_facts& in, std::int64_t unix_now, std::string& api_key_name,
                                 std::vector<std::string>& claims) const;
  outbound_response refuse(const request_facts& in, unsigned status, std::size_t reason,
                           std::string_view description) const;
  limit_verdict admit_shared(const limit& l, std::string_view key, std::size_t thread, clock::time_point now,
                             clock::time_point deadline, boost::asio::yield_context yield) const;

  const route_settings& route_;
  const std::size_t route_index_;
  const metric_set& series_;
  std::shared_ptr<key_file<jwk_set>> jwks_;     // jwks_file, or
  std::shared_ptr<jwks_fetcher> jwks_fetched_;  // jwks_url
  std::shared_ptr<key_file<api_key_set>> api_keys_;
  jwt_rules rules_;
  std::vector<std::string> wanted_;  // claims read from a token: forwarded, used in templates, limit keys
  std::vector<std::pair<std::size_t, std::string>> forwarded_;  // (wanted index, field)
  std::vector<std::pair<std::size_t, std::size_t>> params_;     // (route param, wanted index)
  std::vector<std::string> dropped_;
  std::vector<std::unique_ptr<verified_tokens>> verified_;  // one per I/O thread
  std::vector<std::unique_ptr<limit>> limits_;
  redis_limiter* redis_;
  const redis_store_settings& store_;
  std::string policy_field_;  // "RateLimit-Policy: ...\r\n"
};

}  // namespace gateway
