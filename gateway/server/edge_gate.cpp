#include "gateway/server/edge_gate.hpp"

#include "gateway/codec/char_class.hpp"
#include "gateway/codec/credentials.hpp"
#include "gateway/codec/http_text.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <utility>

#include <spdlog/spdlog.h>

namespace gateway {

namespace {

using limit_key = rate_limit_settings::key_kind;

constexpr std::size_t unknown_key_reason = 11;
constexpr std::size_t no_keys_reason = 12;
constexpr std::size_t max_key_bytes = 256;       // a longer key value is tracked by its hash
constexpr std::size_t verified_capacity = 1024;  // tokens per route and I/O thread

// The credential as `source` says, or empty.
std::string credential(const client_headers& headers, const credential_source& source) {
  std::string value;
  if (source.from == credential_source::kind::cookie) {
    if (!headers.append("cookie", value, "; ")) return {};
    return std::string(cookie_value(value, source.name));
  }
  if (!headers.append(source.name, value, ",")) return {};
  if (source.from == credential_source::kind::header) return value;
  return std::string(bearer_token(value));
}

std::int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

long long whole_seconds_up(microseconds d) {
  return (d.count() + 999'999) / 1'000'000;
}

// A structured-field string (RFC 8941 3.3.3): a limit's name is a token, so nothing needs escaping.
std::string quoted(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

}  // namespace

// A limit's buckets: the local one (backend: local), or with backend: redis, the fallback used while
// Redis does not answer, sized rate / expected_replicas.
struct edge_gate::limit {
  const rate_limit_settings& settings;
  std::shared_ptr<local_limiter> local;  // thread-safe itself; kept across reloads (edge_keys::buckets)
  std::string redis_key;  // the store's prefix, the route and the limit's name: the key's own follows
  std::size_t claim = 0;  // key: jwt.CLAIM: its index in the claims read from the token
};

namespace {

// At most one line a second per I/O thread says that limits fall back, with how many did meanwhile.
void log_fallback(std::string_view route, std::string_view limit, redis_status state) {
  struct pace {
    clock::time_point next{};
    std::uint64_t left_out = 0;
  };
  thread_local pace p;
  const auto now = clock::now();
  if (now < p.next) {
    ++p.left_out;
    return;
  }
  p.next = now + std::chrono::seconds(1);
  spdlog::warn(
      "rate limit '{}' of route {}: redis {}, the local fallback bucket decides{}", limit, route,
      state == redis_status::timeout ? "did not answer in time" : "is unavailable",
      p.left_out != 0 ? "; " + std::to_string(std::exchange(p.left_out, 0)) + " more not logged" : "");
}

}  // namespace

namespace {

// The fetcher of `j`'s jwks_url: this generation's, or the previous one's with the same settings, or a new
// one, whose first keys are waited for at most start_wait.
std::shared_ptr<jwks_fetcher> fetcher_of(const jwt_settings& j, edge_keys& keys) {
  const auto same = [&](const std::pair<jwt_settings, std::shared_ptr<jwks_fetcher>>& f) {
    const auto& o = f.first;
    return o.jwks_url == j.jwks_url && o.jwks_tls == j.jwks_tls && o.refresh == j.refresh &&
           o.min_refresh == j.min_refresh && o.fetch_timeout == j.fetch_timeout;
  };
  for (const edge_keys* from : std::array<const edge_keys*, 2>{&keys, keys.previous}) {
    if (from == nullptr) continue;
    const auto it = std::find_if(from->fetched.begin(), from->fetched.end(), same);
    if (it == from->fetched.end()) continue;
    if (from != &keys) keys.fetched.push_back(*it);
    return it->second;
  }
  jwks_location where{j.jwks_url,         j.jwks_host, j.jwks_port,   j.jwks_path,
                      j.jwks_tls.context, j.refresh,   j.min_refresh, j.fetch_timeout};
  auto fetcher = std::make_shared<jwks_fetcher>(std::move(where));
  if (!fetcher->wait_first(j.start_wait))
    spdlog::warn("jwks {}: no keys within start_wait; its routes answer 503 until a fetch succeeds",
                 j.jwks_url);
  keys.fetched.emplace_back(j, fetcher);
  return fetcher;
}

// A limit's local buckets: the previous generation's when the route and the limit are the same (a reload
// does not give every client its burst again), else new ones.
std::shared_ptr<local_limiter> buckets_of(const route_settings& route, const rate_limit_settings& l,
                                          double share, edge_keys& keys) {
  auto identity = route.method + " " + route.path + "\n" + l.name + "\n" +
                  std::to_string(static_cast<int>(l.key)) + l.key_name + "\n" +
                  std::to_string(l.per_second() / share) + "\n" + std::to_string(l.bucket() / share) + "\n" +
                  std::to_string(l.max_keys);
  if (keys.previous != nullptr) {
    for (const auto& [id, buckets] : keys.previous->buckets) {
      if (id != identity) continue;
      keys.buckets.emplace_back(std::move(identity), buckets);
      return buckets;
    }
  }
  auto made =
      std::make_shared<local_limiter>(l.per_second() / share, std::max(1.0, l.bucket() / share), l.max_keys);
  keys.buckets.emplace_back(std::move(identity), made);
  return made;
}

}  // namespace

void edge_keys::check() const {
  for (const auto& f : jwks) f->check();
  for (const auto& f : api_keys) f->check();
}

edge_gate::edge_gate(const route_settings& route, std::size_t route_index, edge_keys& keys,
                     std::size_t threads, const metric_set& series, redis_limiter* redis,
                     const redis_store_settings& store)
    : route_(route), route_index_(route_index), series_(series), redis_(redis), store_(store) {
  if (route.auth && route.auth->jwt) {
    const auto& j = *route.auth->jwt;
    if (!j.jwks_url.empty()) {
      jwks_fetched_ = fetcher_of(j, keys);
    } else {
      for (const auto& f : keys.jwks) {
        if (f->path() == j.jwks_file) jwks_ = f;
      }
    }
    if (!jwks_ && !jwks_fetched_) {
      jwks_ = std::make_shared<key_file<jwk_set>>(
          j.jwks_file, [](std::string_view text, std::string& error) { return jwk_set::parse(text, error); });
      std::string error;
      if (!jwks_->load(error)) throw std::runtime_error("route " + route.path + ": auth.jwt: " + error);
      keys.jwks.push_back(jwks_);
    }
    for (const auto& name : j.algorithms) {
      if (auto a = parse_jwt_algorithm(name)) rules_.algorithms.push_back(*a);
    }
    rules_.issuers = j.issuers;
    rules_.audiences = j.audiences;
    rules_.leeway = std::chrono::duration_cast<std::chrono::seconds>(j.leeway);
    rules_.required_claims = j.required_claims;
    for (const auto& [claim, values] : j.claim_values) rules_.claim_values.push_back({claim, values});
    const auto want = [&](const std::string& claim) {
      const auto it = std::find(wanted_.begin(), wanted_.end(), claim);
      if (it != wanted_.end()) return static_cast<std::size_t>(it - wanted_.begin());
      wanted_.push_back(claim);
      return wanted_.size() - 1;
    };
    for (const auto& [claim, field] : j.forward_claims) {
      forwarded_.emplace_back(want(claim), field);
      dropped_.push_back(field);
    }
    if (const auto* aggregate = route.aggregate()) {
      for (std::size_t i = 0; i < aggregate->params.size(); ++i) {
        if (aggregate->params[i].from_identity)
          params_.emplace_back(i, want(aggregate->params[i].name.substr(4)));
      }
    }
    for (const auto& l : route.rate_limits) {
      if (l.key == limit_key::claim) want(l.key_name);
    }
    if (!j.forward_token && j.token.from != credential_source::kind::cookie) dropped_.push_back(j.token.name);
    for (std::size_t t = 0; t < threads; ++t)
      verified_.push_back(std::make_unique<verified_tokens>(verified_capacity, rules_.leeway));
  }
  if (route.auth && route.auth->api_key) {
    const auto& a = *route.auth->api_key;
    for (const auto& f : keys.api_keys) {
      if (f->path() == a.keys_file) api_keys_ = f;
    }
    if (!api_keys_) {
      api_keys_ = std::make_shared<key_file<api_key_set>>(
          a.keys_file,
          [](std::string_view text, std::string& error) { return api_key_set::parse(text, error); });
      std::string error;
      if (!api_keys_->load(error))
        throw std::runtime_error("route " + route.path + ": auth.api_key: " + error);
      keys.api_keys.push_back(api_keys_);
    }
    if (a.key.from != credential_source::kind::cookie) dropped_.push_back(a.key.name);
    if (!a.forward_as.empty()) dropped_.push_back(a.forward_as);
  }
  for (const auto& l : route.rate_limits) {
    if (l.redis && redis == nullptr) throw std::runtime_error("route " + route.path + ": no redis store");
    const double share = l.redis ? static_cast<double>(store.expected_replicas) : 1.0;
    limits_.push_back(std::unique_ptr<limit>(new limit{
        l, buckets_of(route, l, share, keys),
        l.redis ? store.key_prefix + route.method + " " + route.path + ":" + l.name + ":" : std::string()}));
    if (l.key == limit_key::claim)  // wanted_ holds it (read above): limits keyed by a claim need auth.jwt
      limits_.back()->claim =
          static_cast<std::size_t>(std::find(wanted_.begin(), wanted_.end(), l.key_name) - wanted_.begin());
    policy_field_ += policy_field_.empty() ? "RateLimit-Policy: " : ", ";
    const auto window = std::chrono::duration<double>(l.period).count();
    policy_field_ += quoted(l.name) + ";q=" + std::to_string(std::llround(l.rate)) +
                     ";w=" + std::to_string(std::max<long long>(1, std::llround(window)));
  }
  if (!policy_field_.empty()) policy_field_ += "\r\n";
}

edge_gate::~edge_gate() = default;

bool edge_gate::drops(std::string_view name) const {
  return std::any_of(dropped_.begin(), dropped_.end(),
                     [&](const std::string& d) { return iequals(d, name); });
}

outbound_response edge_gate::refuse(const request_facts& in, unsigned status, std::size_t reason,
                                    std::string_view description) const {
  series_.auth_refused(in.thread, route_index_, reason);
  auto r = error_response(status,
                          status == 401   ? "unauthorized"
                          : status == 403 ? "forbidden"
                                          : description,
                          make_request_id(in.incoming_id));
  r.route = static_cast<int>(route_index_);
  if (status == 401 || status == 403) {
    r.fields = "WWW-Authenticate: Bearer realm=\"gateway\"";
    if (reason != 0) {  // a request with no credential gets no error code (RFC 6750 3.1)
      r.fields += status == 403 ? ", error=\"insufficient_scope\"" : ", error=\"invalid_token\"";
      r.fields += ", error_description=\"" + std::string(description) + "\"";
    }
    r.fields += "\r\n";
  }
  return r;
}

outbound_response edge_gate::authenticate(const request_facts& in, std::int64_t unix_now,
                                          std::string& api_key_name, std::vector<std::string>& claims) const {
  const auto& headers = in.headers;
  const auto thread = in.thread;
  if (api_keys_) {
    const auto presented = credential(headers, route_.auth->api_key->key);
    if (presented.empty()) return refuse(in, 401, 0, "no API key");
    const auto keys = api_keys_->get();
    const auto* name = keys != nullptr ? keys->find(presented) : nullptr;
    if (name == nullptr) return refuse(in, 401, unknown_key_reason, "unknown API key");
    api_key_name = *name;
    return no_answer();
  }
  const auto token = credential(headers, route_.auth->jwt->token);
  if (token.empty()) return refuse(in, 401, 0, "no token");
  const auto keys = jwks_ ? jwks_->get() : jwks_fetched_->get();
  if (keys == nullptr) return refuse(in, 503, no_keys_reason, "the route's keys are not available");
  auto& cache = *verified_[thread];
  if (const auto* hit = cache.find(token, *keys, unix_now)) {
    claims = hit->claims;
    return no_answer();
  }
  auto verdict = verify_jwt(token, *keys, rules_, unix_now, wanted_);
  if (verdict.failure != jwt_failure::none) {
    if (verdict.failure == jwt_failure::unknown_kid && jwks_fetched_)
      jwks_fetched_->unknown_kid();  // rotated?
    const auto reason = static_cast<std::size_t>(verdict.failure) - 1;
    return refuse(in, verdict.failure == jwt_failure::forbidden ? 403 : 401, reason, verdict.description);
  }
  claims = verdict.claims;
  cache.insert(token, *keys, verdict);
  return no_answer();
}

limit_verdict edge_gate::admit_shared(const limit& l, std::string_view key, std::size_t thread,
                                      clock::time_point now, clock::time_point deadline,
                                      boost::asio::yield_context yield) const {
  const auto within = std::min(deadline, now + store_.timeout);
  const auto shared =
      redis_->admit(thread, l.redis_key + std::string(key),
                    gcra_limit{l.settings.per_second(), l.settings.bucket(), 1}, within, yield);
  if (shared.state == redis_status::ok) {
    limit_verdict v;
    v.allowed = shared.allowed;
    v.remaining = static_cast<double>(std::max<std::int64_t>(0, shared.remaining));
    v.retry_after = std::chrono::duration_cast<microseconds>(shared.retry_after);
    v.reset = std::chrono::duration_cast<microseconds>(shared.reset);
    return v;
  }
  series_.limit_fallback(thread, route_index_);
  log_fallback(route_.path, l.settings.name, shared.state);
  return l.local->admit(key, clock::now());
}

outbound_response edge_gate::check(const client_headers& headers, std::string_view client,
                                   std::string_view incoming_id, std::size_t thread, clock::time_point now,
                                   clock::time_point deadline, boost::asio::yield_context yield,
                                   edge_pass& pass) const {
  std::string api_key_name;
  std::vector<std::string> claims;
  if (route_.auth) {
    const request_facts in{headers, incoming_id, thread};
    if (auto r = authenticate(in, unix_seconds(), api_key_name, claims); r.status != 0) return r;
    for (const auto& [index, field] : forwarded_) {
      const auto& value = claims[index];
      if (!value.empty() && value.size() <= 4096 && char_class::all_of(value, char_class::field_text))
        pass.fields.append("\r\n").append(field).append(": ").append(value);
    }
    for (const auto& [param, index] : params_) pass.params.emplace_back(param, claims[index]);
    if (!api_key_name.empty() && !route_.auth->api_key->forward_as.empty())
      pass.fields.append("\r\n").append(route_.auth->api_key->forward_as).append(": ").append(api_key_name);
  }
  if (limits_.empty()) return no_answer();
  limit_verdict tightest;  // the refusing limit's, else the one with the least left
  const limit* tightest_limit = nullptr;
  std::string key;
  for (const auto& l : limits_) {
    const auto& s = l->settings;
    key.clear();
    switch (s.key) {
      case limit_key::client:
        key = client;
        break;
      case limit_key::header:
        headers.append(s.key_name, key, ",");
        break;
      case limit_key::api_key:
        key = api_key_name;
        break;
      case limit_key::claim:
        key = claims[l->claim];
        break;
      case limit_key::global:
        break;
    }
    if (key.size() > max_key_bytes) key = "#" + std::to_string(std::hash<std::string>{}(key));
    const auto v = s.redis ? admit_shared(*l, key, thread, now, deadline, yield) : l->local->admit(key, now);
    if (tightest_limit == nullptr || !v.allowed || v.remaining < tightest.remaining) {
      tightest = v;
      tightest_limit = l.get();
    }
    if (!v.allowed) break;  // the later limits keep their tokens
  }
  std::string fields = policy_field_;
  fields += "RateLimit: " + quoted(tightest_limit->settings.name) +
            ";r=" + std::to_string(static_cast<long long>(tightest.remaining)) +
            ";t=" + std::to_string(whole_seconds_up(tightest.reset)) + "\r\n";
  if (tightest.allowed) {
    pass.answer_fields = std::move(fields);
    return no_answer();
  }
  series_.rate_limited(thread, route_index_, static_cast<std::size_t>(tightest_limit->settings.key));
  auto r = error_response(429, "too many requests: limit '" + tightest_limit->settings.name + "'",
                          make_request_id(incoming_id));
  r.route = static_cast<int>(route_index_);
  r.fields = std::move(fields);
  r.fields +=
      "Retry-After: " + std::to_string(std::max<long long>(1, whole_seconds_up(tightest.retry_after))) +
      "\r\n";
  return r;
}

}  // namespace gateway
