#pragma once
// The gateway's settings: one struct per YAML section, each field with its default.
// Only config_loader knows YAML; everything else reads these structs.

#include "gateway/codec/body_template.hpp"
#include "gateway/codec/ip_network.hpp"
#include "gateway/codec/json_object.hpp"
#include "gateway/codec/json_path.hpp"
#include "gateway/codec/path_template.hpp"
#include "gateway/config/edge_settings.hpp"
#include "gateway/config/route_pattern.hpp"
#include "gateway/runtime/duration.hpp"
#include "gateway/tls/tls_settings.hpp"

#include <boost/container/small_vector.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace gateway {

class param_pattern;

// Where a value was written in the configuration file (1-based; 0: not written), for the checks made
// after load (local_file_checks.hpp).
struct source_position {
  int line = 0;
  int column = 0;

  // Where a setting was written is not part of it: settings compare equal wherever they moved in the file.
  bool operator==(const source_position&) const { return true; }
};

struct listen_address {
  std::string host = "0.0.0.0";
  std::uint16_t port = 8080;
};

// How downstream requests say who the client is: X-Forwarded-For/-Proto/-Host, RFC 7239 Forwarded, or
// nothing. What a peer in trusted_proxies sent in them is kept and extended; anyone else's is replaced.
enum class forwarded_style { x_forwarded, forwarded, none };
// Answers compressed for clients that accept gzip or deflate (Accept-Encoding), when their body has
// min_bytes to max_bytes (compression runs on the I/O thread: max_bytes bounds its time); every answer
// of a route then carries Vary: Accept-Encoding.
struct compression_settings {
  bool enabled = true;
  std::size_t min_bytes = 1024;
  std::size_t max_bytes = 1024 * 1024;
  unsigned level = 1;  // zlib's 1 (fastest) to 9 (smallest)
};

// What the gateway's own error answers say of a failure behind it (a required call, a pass-through
// exchange): `full` names the call or downstream and why (for clients inside the organisation); `reason`
// only the kind of failure ("upstream failure", "timeout", "upstream unavailable"), for a public edge.
enum class error_detail { full, reason };

struct server_settings {
  listen_address listen;
  forwarded_style forwarded = forwarded_style::x_forwarded;
  std::vector<ip_network> trusted_proxies;
  unsigned threads = 0;                     // 0 = one per core
  std::size_t coroutine_stack = 64 * 1024;  // bytes per coroutine stack
  // SO_REUSEPORT on the public and admin listeners: a new process binds the ports while the old one
  // drains (a restart without a gap); both accept during the overlap.
  bool reuse_port = true;
  // Reload when the configuration file changes (inotify on its directory, which also sees a Kubernetes
  // ConfigMap's symlink swap); SIGHUP and POST /reload reload either way.
  bool watch_config = true;
  compression_settings compression;
  listener_tls_settings tls;
  error_detail errors = error_detail::full;  // `error_detail`

  // The stack to allocate: sanitizer builds need several times more than the configured size.
  std::size_t stack_bytes() const;
};

struct limits_settings {
  std::size_t max_connections = 10'000;        // open client connections; more are answered 503 and closed
  std::size_t max_connections_per_client = 0;  // open connections from one client IP address; 0 = unlimited
  std::size_t memory_budget = 0;               // bytes; 0 = derived automatically
  std::size_t max_inflight = 5'000;            // requests being handled; more are answered 503 at once
  std::size_t max_header_bytes = 16 * 1024;
  std::size_t max_body_bytes = 64 * 1024;
  microseconds header_timeout = std::chrono::seconds(10);  // whole request head must arrive within it
  microseconds idle_timeout = std::chrono::seconds(60);    // keep-alive connection with no request
  microseconds write_timeout = std::chrono::seconds(10);
};

enum class log_format { json, text };

struct log_settings {
  std::string level = "info";
  bool access = true;  // one line per request on stdout
  log_format format = log_format::json;
};

struct admin_settings {
  listen_address listen{"0.0.0.0", 9901};
  microseconds stall_threshold = std::chrono::seconds(5);  // an I/O thread silent longer fails /livez
  // A bearer token that lets POST /reload come from anywhere (without it, only from a loopback address).
  // Never shown in /config.
  std::string token;
  // Every admin path but the probes (/livez /readyz /startupz) needs Authorization: Bearer <token>.
  bool require_token = false;
  // Admin connections (server/admin_server.hpp): every new one is admitted; at a cap, the one that has
  // waited longest for a request head is closed to make room, first among the new one's own address.
  std::size_t max_connections = 256;
  std::size_t max_connections_per_client = 64;            // 0 = no cap per client address
  microseconds header_timeout = std::chrono::seconds(2);  // a whole request, from the accept or first byte
  microseconds idle_timeout = std::chrono::seconds(10);   // a kept-alive connection with no request
};

struct shutdown_settings {
  microseconds drain_delay = std::chrono::seconds(5);  // keep serving after SIGTERM while /readyz is 503
  microseconds timeout = std::chrono::seconds(30);     // from SIGTERM: then in-flight requests are cancelled
};

// OpenTelemetry traces (observe/tracing.hpp): a server span per request and a client span per downstream
// call, sent over OTLP/HTTP (protobuf) to `endpoint` from a background thread.
struct tracing_config {
  bool enabled = false;
  std::string endpoint = "http://127.0.0.1:4318/v1/traces";  // http://host:port/path
  double sample_ratio = 1.0;  // of the traces that start here (no sampled traceparent); degraded ones always
  std::string service_name = "gateway";
  std::size_t max_queue_spans = 2048;  // spans waiting for export; beyond it they are dropped (counted)
  std::size_t max_batch_spans = 512;
  microseconds batch_delay = std::chrono::seconds(1);
  microseconds export_timeout = std::chrono::seconds(5);
};

enum class downstream_kind { http, sql };
enum class sql_driver { sqlite, postgres };

// A SQL downstream: one parameterised query run through a connection pool behind a semaphore.
struct sql_settings {
  sql_driver driver = sql_driver::sqlite;
  std::string database;  // sqlite: file path
  source_position database_at;
  bool read_only = false;    // sqlite: open read-only and immutable (a file that never changes)
  std::string dsn;           // postgres: libpq connection string, ${ENV} already substituted
  bool dsn_has_env = false;  // the dsn took a value from the environment (a secret: never shown)
  std::size_t pool_size = 32;
  std::size_t permits = 0;  // 0 = pool_size; never more than pool_size
  std::size_t max_waiting = 1000;
  std::string query;                // as written, with :name placeholders
  std::string statement;            // the query with positional placeholders ($1 postgres, ?1 sqlite)
  std::vector<std::string> params;  // placeholder names, in positional order

  bool operator==(const sql_settings&) const = default;
  std::size_t effective_permits() const { return permits == 0 ? pool_size : permits; }
};

// What counts as a downstream's failure, for its circuit breaker, its endpoints' breakers and outlier
// ejection alike (downstream/failure_rule.hpp applies it): the kinds listed, and the statuses listed
// whatever their class. Never counted, whatever the rule: a call that did not reach the downstream (the
// gateway's own queueing, a cancelled call).
struct failure_rule {
  enum kind : std::uint8_t {
    connect = 1,         // refused, timed out connecting, TLS handshake failed
    reset = 2,           // the connection reset, closed early or failed otherwise
    timeout = 4,         // no (whole) answer in time once connected
    invalid_answer = 8,  // a 2xx that is not a JSON object within the limits, or a 1xx/3xx
    status_5xx = 16,
    status_4xx = 32,
  };
  std::uint8_t kinds = connect | reset | timeout | invalid_answer | status_5xx;
  std::vector<std::uint16_t> statuses;  // counted too, e.g. 429
  bool operator==(const failure_rule&) const = default;
};

// A downstream's circuit breaker. It opens when `failure_percent` of the calls in the last `window`
// failed (as `failures` says), once at least `min_calls` were made in it, or after
// `consecutive_failures` failures in a row (0: that rule off). Open, calls fall back at once without
// I/O; after `cooldown` it lets `half_open_calls` probe calls through and closes when all of them
// succeed, or opens again on the first that fails. With `per_endpoint`, each endpoint of an HTTP
// downstream with several has a breaker of its own with the same settings, judging the attempts sent to
// it: an open one is left out of the balancing.
struct breaker_settings {
  bool enabled = true;
  bool per_endpoint = true;
  microseconds window = std::chrono::seconds(10);
  unsigned min_calls = 20;
  unsigned failure_percent = 50;
  unsigned consecutive_failures = 0;
  microseconds cooldown = std::chrono::seconds(5);
  unsigned half_open_calls = 3;
  failure_rule failures;
  bool operator==(const breaker_settings&) const = default;
};

// Retries of a failed HTTP call within its deadline. Retried: a connect that failed, an answer whose status
// is in `on_status`, and with `on_reset` a connection reset or closed before any of the answer arrived
// (the downstream may have acted on the request); never a call that was cancelled or ran out of time. A retry
// waits a jittered backoff (uniform in [0, backoff * 2^(n-1)], at most max_backoff), starts only when time is
// left after it, and only within the retry budget: retries in flight at most budget_percent of the
// downstream's calls in flight, or budget_min.
struct retry_settings {
  unsigned attempts = 2;  // per call, the first included; 1: no retries
  std::vector<unsigned> on_status{502, 503};
  bool on_reset = false;
  microseconds backoff = milliseconds(10);
  microseconds max_backoff = milliseconds(100);
  unsigned budget_percent = 20;
  unsigned budget_min = 3;
  bool operator==(const retry_settings&) const = default;
};

// Hedged requests: a call whose first attempt has not answered after the hedge delay sends a second one;
// the first good answer wins and the other attempt is cancelled (its socket closed). The delay is fixed
// (`delay`), or a percentile of the downstream's recent good latencies (`percentile`, while `delay` is
// 0), within [min_delay, max_delay]. At most budget_percent extra calls over the last 10 s.
struct hedge_settings {
  bool enabled = false;
  microseconds delay{0};
  unsigned percentile = 95;
  microseconds min_delay = milliseconds(5);
  microseconds max_delay = std::chrono::seconds(1);
  unsigned budget_percent = 10;
  bool operator==(const hedge_settings&) const = default;
};

// Outlier ejection across a downstream's endpoints, on each I/O thread: an endpoint whose calls failed
// `consecutive_failures` times in a row is left out of the balancing for base_time, the n-th time n times
// as long (at most max_time), and then comes back; never more than max_percent of the endpoints at once
// (so a downstream with one endpoint never ejects it).
struct ejection_settings {
  unsigned consecutive_failures = 5;  // 0: off
  microseconds base_time = std::chrono::seconds(10);
  microseconds max_time = std::chrono::seconds(300);
  unsigned max_percent = 50;
  bool operator==(const ejection_settings&) const = default;
};

// Stale-if-error: a downstream's last good answer per target, kept for max_stale and served (degraded,
// reason stale) instead of the static fallback when a call to the same target fails; at most max_bytes
// kept, the least recently used going first.
struct stale_settings {
  bool enabled = false;  // serve stale answers (stale_if_error)
  bool cache = false;    // serve fresh answers, as the downstream's Cache-Control allows (http `cache`)
  microseconds max_stale = std::chrono::seconds(60);
  std::size_t max_bytes = 1024 * 1024;
  bool operator==(const stale_settings&) const = default;
};

struct endpoint_address {
  std::string host;
  std::uint16_t port = 0;
  bool operator==(const endpoint_address&) const = default;
};

struct downstream_settings {
  std::string name;
  downstream_kind kind = downstream_kind::http;
  sql_settings sql;  // when kind == sql
  std::string url;   // as written
  std::string host;
  std::uint16_t port = 80;  // 443 for https
  std::string base_path;    // prefix of every target, without trailing '/'
  microseconds connect_timeout = milliseconds(100);
  std::size_t max_connections = 1024;
  // At most this many connections to one endpoint being connected at once (an equal share per I/O thread,
  // at least one): the connect ramp (connection_pool.hpp). Calls beyond it wait for a connection or a
  // connect slot, locally, within their deadline.
  std::size_t max_connecting = 64;
  std::size_t max_response_bytes = 1024 * 1024;          // http: body; sql: the first row's values
  microseconds idle_timeout = std::chrono::seconds(30);  // pooled connection unused longer is not reused
  microseconds dns_refresh = std::chrono::seconds(30);   // a host name is resolved again this often
  // http: where calls go, balanced (power of two choices on calls in flight): every address the url's
  // host resolves to, or every address of every entry here when there are some.
  std::vector<endpoint_address> endpoints;
  ejection_settings ejection;  // http
  breaker_settings breaker;
  stale_settings stale;
  retry_settings retry;     // http
  hedge_settings hedge;     // http
  bool coalesce = false;    // http: identical calls in flight on an I/O thread share one request
  bool compressed = false;  // http: ask for gzip or deflate answers (Accept-Encoding: gzip, deflate)
  tls_settings tls;         // http: an https:// url
  bool operator==(const downstream_settings&) const = default;
};

struct param_settings {
  std::string name;
  bool in_path = false;  // from the route's path template (else from the query); required unless a catch-all
  // "{jwt.claim}": the claim of the caller's verified token (auth.jwt), never taken from the request.
  bool from_identity = false;
  bool required = false;
  std::string pattern;                           // as written (RE2 syntax); empty = any value
  std::shared_ptr<const param_pattern> matcher;  // compiled `pattern`; null when empty
};

// One request's parameter values, aligned with its route's params (on the request's stack: most routes
// have a few).
using param_values = boost::container::small_vector<std::string, 4>;

enum class response_shape { array, object };

// Which headers downstream requests carry besides the gateway's own (Host, Accept, X-Request-Timeout-Ms,
// X-Request-Id, traceparent and the forwarded ones): client headers passed on by name (`forward`; several
// fields of one name joined), fixed ones (`set`; a value may come from ${ENV}), and, for a call, headers
// of its route's policy or forwarded ones it leaves out (`remove`). Names compare case-insensitively;
// hop-by-hop and the gateway's own names are refused at load.
struct header_policy {
  struct fixed {
    std::string name;
    std::string value;    // ${ENV} substituted
    bool secret = false;  // from the environment, or a credential's name: never shown in /config
  };
  std::vector<std::string> forward;
  std::vector<fixed> set;
  std::vector<std::string> remove;

  bool empty() const { return forward.empty() && set.empty() && remove.empty(); }
};

// What an HTTP call sends as its body: nothing, the client's request body (JSON, passed through), or a
// JSON object built from the route's parameters (body_template).
enum class call_body : unsigned char { none, client, built };

// Which fields of a call's answer reach the client's answer (aggregate routes): fields copied by name
// (`forward`), Set-Cookie fields whose cookie name is listed (`set_cookie`; names compare exactly), and
// the strictest of the calls' Cache-Control (`cache_control`, a route's setting, copied to every call). Names
// of `forward` compare case-insensitively; framing, hop-by-hop, validators and the gateway's own fields are
// refused at load. Only a 2xx answer's fields are kept, each value text of at most 4 KiB, 16 KiB per call.
struct response_header_policy {
  std::vector<std::string> forward;
  std::vector<std::string> set_cookie;
  bool cache_control = false;

  bool empty() const { return forward.empty() && set_cookie.empty() && !cache_control; }
};

// Statuses of a call's answer that become the client's whole answer (`pass_status`, 400-599, each once):
// the status, the answer's body when it is a JSON object (else the gateway's JSON error), and the fields
// of the answer `pass_headers` names (`fields.forward`; framing, hop-by-hop and the gateway's own fields
// are refused at load). Empty for most calls: then nothing is checked per answer.
struct passed_answer_policy {
  std::vector<unsigned> statuses;
  response_header_policy fields;

  bool empty() const { return statuses.empty(); }
  bool passes(unsigned status) const {
    for (const auto s : statuses) {
      if (s == status) return true;
    }
    return false;
  }
};

// Composition (aggregate/fanout.hpp, "Composing calls" in the README): a "{call.field}" in a call's
// templates, `when` or `for_each`: a value of an earlier call's answer. `call` is the call it names (an
// index into the route's calls), or item_of_call for "{item...}", the element of a for_each call.
struct call_reference {
  static constexpr std::size_t item_of_call = static_cast<std::size_t>(-1);
  std::string text;  // as written between the braces: "product.seller.id"; the templates' lookup name
  std::size_t call = 0;
  json_path path;  // inside the call's answer (or the element)
  // Where the value goes decides what it may be (the call is not sent otherwise): in a path segment, not
  // empty (`/sellers/` would name the collection); in a path or a header field, at most max_short bytes.
  bool segment = false;
  bool short_value = false;
  static constexpr std::size_t max_short = 2048;
};

// A header field of a call's `set` whose value takes "{call.field}" values: expanded when the call starts.
struct header_template {
  std::string name;
  std::vector<std::pair<bool, std::string>> pieces;  // (is a reference, its text or the literal text)
};

// `for_each`: the call runs once per element of an array in an earlier answer (source), for the first
// max_items elements, at most `concurrency` at once.
struct for_each_settings {
  call_reference source;
  std::size_t max_items = 32;
  std::size_t concurrency = 8;
  std::size_t first_slot = 0;  // the fan-out's slot of its first element (aggregate_route::slots)
};

// `when`: the call is made only when a parameter, or a field of an earlier answer, is present and neither
// empty nor false; otherwise it is skipped (left out of the answer).
struct when_condition {
  bool on_param = false;
  std::size_t param = 0;  // into the route's params, when on_param
  call_reference field;   // otherwise
};

// Response shaping of one call's entry, after `fields`: target (keep a nested object of the answer; the
// fallback is written as that object already), omit, rename; then where its members go in an object
// response: its own entry (default), a `group` object shared with other calls, or the top level (flatten).
struct call_shaping {
  std::optional<json_path> target;
  std::vector<std::string> omit;
  std::vector<std::pair<std::string, std::string>> rename;  // from, to
  std::string group;
  bool flatten = false;

  bool empty() const { return !target && omit.empty() && rename.empty() && group.empty() && !flatten; }
};

struct call_settings {
  std::string name;
  std::string downstream;
  std::size_t downstream_index = 0;  // into gateway_config::downstreams
  path_template path;                // http calls only
  std::string method = "GET";        // http calls only
  call_body body = call_body::none;
  body_template built_body;  // when body == built
  // Retried and hedged only when true: by default for GET, PUT and DELETE (RFC 9110 9.2.2).
  bool idempotent = true;
  std::optional<microseconds> timeout;
  bool required = false;
  std::vector<std::string> fields;          // empty = keep every field
  std::string fallback_members;             // the fallback object's members serialised, without braces
  header_policy headers;                    // as written for the call
  header_policy effective_headers;          // the route's with the call's applied: what its requests carry
  response_header_policy response_headers;  // as written for the call (adds to the route's)
  response_header_policy effective_response_headers;  // the route's and the call's together
  passed_answer_policy pass;                          // http calls only
  // Composition: the calls this one needs (indices into the route's calls), the references its templates
  // make, its `set` fields that take values, and what it runs on or under. All empty for a flat call.
  std::vector<std::string> after;
  std::vector<std::size_t> after_index;
  std::vector<call_reference> references;
  std::vector<header_template> header_templates;
  std::optional<for_each_settings> for_each;
  std::optional<when_condition> when;
  call_shaping shaping;
  json_object_text fallback_object;  // fallback_members as an object (for shaping)
  bool has_dependents = false;       // another call names this one in its `after`
};

// Cross-origin requests to a route (browsers): which origins ("*": any) may read its answers, which
// methods and request headers a preflight allows (methods: the route's own when empty), which answer
// headers scripts may read, whether with credentials (cookies), and how long a preflight is cached.
struct cors_settings {
  std::vector<std::string> allow_origins;
  std::vector<std::string> allow_methods;
  std::vector<std::string> allow_headers;
  std::vector<std::string> expose_headers;
  bool allow_credentials = false;
  microseconds max_age = std::chrono::minutes(10);
};

// A pass-through route (`proxy:`): every request it matches goes to one HTTP downstream as it came (any
// method unless the route names one), its path's matched prefix replaced by `rewrite` when one is given
// (a downstream's base_path goes first), the query unchanged; request and answer bodies are streamed
// both ways through buffers of `buffer_bytes` (no body is held whole), chunked or with a length.
// Client header fields go on except hop-by-hop ones and those in `headers.remove` (the route's header
// policy: `set` adds, `remove` drops; `forward` is refused, everything is forwarded already), with the
// forwarded fields (server.forwarded). Connections come from the downstream's own pools.
struct proxy_route {
  std::string downstream;
  std::size_t downstream_index = 0;  // into gateway_config::downstreams
  std::optional<std::string> rewrite;
  // From the request's head: its body received whole and sent, and the answer's head in, within it.
  microseconds timeout = std::chrono::seconds(30);
  microseconds idle_timeout = std::chrono::seconds(60);  // no progress either way for this long: ended
  microseconds connect_timeout{};                        // 0: the downstream's
  std::size_t max_body_bytes = 16 * 1024 * 1024;         // request body (413 beyond); 0 = unlimited
  std::size_t buffer_bytes = 32 * 1024;                  // per exchange (both directions in turn)
};

// An aggregate route: its calls fanned out under the deadline, their answers merged into one.
struct aggregate_route {
  microseconds deadline = milliseconds(800);
  std::vector<param_settings> params;
  response_shape response = response_shape::array;
  std::string degraded_reason_field;        // a degraded entry's field naming why (its outcome); empty: none
  std::optional<cors_settings> cors;        // none: no CORS fields, preflights refused like any OPTIONS
  response_header_policy response_headers;  // for every call (a call's lists add to these)
  // Some call passes answer fields on (a call's effective_response_headers is not empty): only then does
  // a request of the route combine them.
  bool passes_response_headers = false;
  // Some call passes statuses to the client (a call's `pass` is not empty): only then are results checked.
  bool passes_status = false;
  // Some call carries a header policy (a call's effective_headers is not empty): only then does a request
  // of the route render fields per call; otherwise every call carries the forwarded fields alone.
  bool has_header_policy = false;
  bool takes_body = false;  // a call passes the client's body on: the request's body is read
  std::vector<call_settings> calls;
  // Composition: some call has `after`, `when` or `for_each` (the fan-out then starts calls as their
  // inputs arrive); the answer is written by the shaping merge (a call is shaped, skipped or per item).
  bool graph = false;
  bool shaped = false;
  // The fan-out's slots: one per call, then max_items per for_each call; slot_owner[slot] is its call.
  std::size_t slots = 0;
  std::vector<std::size_t> slot_owner;
  call_shaping shaping;       // the route's own rename and omit, applied to every call before its own
  bool verifies_jwt = false;  // the route's auth.jwt: "{jwt.claim}" names a claim of the caller's token
};

// A route: what it matches and the header policy, then what it is, aggregate or pass-through. The
// accessors give the one it is, null for the other.
struct route_settings {
  std::string path;            // as written (`path`, or `path_prefix`): the route's name in metrics and logs
  route_pattern pattern;       // what it matches
  std::string method = "GET";  // "*" (a proxy route naming none): any method
  // Aggregate: for every call (remove: none at this level). Pass-through: fields set on and removed from
  // the request sent.
  header_policy headers;
  std::variant<aggregate_route, proxy_route> kind;
  std::optional<auth_settings> auth;             // who may call it (server/edge_gate.hpp)
  std::vector<rate_limit_settings> rate_limits;  // how often

  const aggregate_route* aggregate() const { return std::get_if<aggregate_route>(&kind); }
  aggregate_route* aggregate() { return std::get_if<aggregate_route>(&kind); }
  const proxy_route* proxy() const { return std::get_if<proxy_route>(&kind); }
  proxy_route* proxy() { return std::get_if<proxy_route>(&kind); }
};

struct gateway_config {
  std::string source;  // file it was loaded from
  server_settings server;
  limits_settings limits;
  log_settings log;
  admin_settings admin;
  shutdown_settings shutdown;
  tracing_config tracing;
  std::vector<downstream_settings> downstreams;
  std::vector<route_settings> routes;
  redis_store_settings redis;  // for rate limits with backend: redis
  // Values taken from a credential's environment variable (${..._TOKEN}, ...): never shown in /config.
  std::vector<std::string> secret_values;

  const downstream_settings* find_downstream(const std::string& name) const;
};

}  // namespace gateway
