#pragma once
// The behaviour of every path (mode, latency, body), shared by all endpoints (listeners) or overridden
// for one of them, and the counters served by /__stats, in total and per endpoint.
// Thread-safe: one mutex guards the path table and the request counts (one short lookup per request, which
// also draws the request's delay from the path's generator); the other counters are relaxed atomics.
// Entries and bodies are never removed, so a ticket stays valid for the registry's lifetime.

#include "loadtest/mock/behaviour.hpp"
#include "loadtest/mock/body_template.hpp"
#include "loadtest/mock/latency.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mock {

// The request headers whose last values /__stats shows per path ("" when absent).
struct request_headers {
  std::string_view timeout_ms;         // X-Request-Timeout-Ms
  std::string_view request_id;         // X-Request-Id
  std::string_view traceparent;        // traceparent
  std::string_view accept_encoding{};  // Accept-Encoding
  // The fields named by --record-headers that came (lower-case name, values joined by ", ").
  std::vector<std::pair<std::string, std::string>> recorded{};
};

// A change to a path's behaviour; an absent field keeps its value.
struct path_change {
  std::optional<mode> how;
  std::optional<latency> delay;
  // The body of ok answers, JSON and maybe a template (body_template.hpp); "" goes back to the generated one.
  std::optional<std::string> body;
  // More header fields of its answers (ok, fail, unavailable, items and the encoded modes),
  // "Name: value\r\n" each; "" goes back to none.
  std::optional<std::string> headers{};
};

class path_registry {
  struct path_entry;

 public:
  // Paths tracked individually. Requests to further names get the default behaviour and are counted only
  // in the global and per-endpoint counters, so random names cannot grow memory without bound.
  static constexpr std::size_t max_paths = 1024;
  // The bytes of all the distinct bodies (and header texts) ever configured.
  static constexpr std::size_t max_body_bytes = 64 * 1024 * 1024;

  // `ports`: the port of each endpoint, in listener order (at least one); an endpoint is named by its index
  // in that list. `seed` seeds the paths' delay generators.
  path_registry(latency default_delay, std::vector<unsigned short> ports, std::uint64_t seed);

  // The request headers recorded per path (lower-case names); set before the server starts.
  void record_headers(std::vector<std::string> names) { recorded_names_ = std::move(names); }
  const std::vector<std::string>& recorded_names() const { return recorded_names_; }

  // Applies `change` to `name` on every endpoint (the fields it sets replace the same fields of any
  // one-endpoint override too) or, when `port` is not 0, on the endpoint listening on `port` only: that
  // endpoint gets an override, a copy of the shared behaviour the first time. A new path starts as mode
  // ok with the default delay. `name` may be a prefix "NAME/*" (see is_valid_setting_name): a request to
  // a path that was never configured itself is answered by the longest prefix above it, if any. Returns
  // an error message (table full, bodies over max_body_bytes, a body that is no template, no endpoint on
  // `port`), empty on success.
  std::string configure(std::string_view name, const path_change& change, unsigned short port = 0);

  // One request to a downstream path: how to answer it, and where to count its cancellation.
  struct ticket {
    behaviour how;
    const body_template* body = nullptr;   // null: the generated ok body
    const std::string* headers = nullptr;  // null: no more header fields
    path_entry* entry = nullptr;           // null when the path is not tracked
    std::size_t endpoint = 0;
  };
  ticket begin_request(std::string_view name, const request_headers& headers, std::size_t endpoint);
  // The client went away before the answer was written.
  void count_cancelled(const ticket& t);

  void connection_opened(std::size_t endpoint);
  void connection_closed(std::size_t endpoint);
  // A TLS handshake completed (an HTTPS endpoint); `resumed`: the client resumed an earlier session.
  void count_tls_handshake(bool resumed);

  // Zeroes the request, cancellation and connection totals and the per-path data, and restarts every
  // delay generator from its seed; keeps the behaviours and the number of open connections.
  void reset();

  // {"requests":N,"cancelled":N,"connections_open":N,"connections_total":N,
  //  "paths":{NAME:{"requests":N,"cancelled":N,...}},   (NAME: the requested path, never a prefix)
  //  (a path's "traceparents": the last 8 that came, oldest first)
  //  "endpoints":{PORT:{"requests":N,"cancelled":N,"connections_open":N,"connections_total":N,
  //                     "paths":{NAME:{"requests":N,"cancelled":N}}}},
  //  "handshakes":{"tls":N,"resumed":N}}   (TLS handshakes of the HTTPS endpoints; resumed sessions)
  // An endpoint lists the paths it has seen since the last reset.
  std::string stats_json() const;

 private:
  struct path_config {
    mode how = mode::ok;
    std::optional<latency> delay;          // nullopt: the default delay
    const body_template* body = nullptr;   // one of bodies_
    const std::string* headers = nullptr;  // one of texts_
  };
  struct counts {
    std::uint64_t requests = 0;
    std::uint64_t cancelled = 0;
  };
  struct path_entry {
    path_config shared;
    std::vector<std::optional<path_config>> overrides;  // by endpoint; empty while there is none
    bool configured = false;  // has settings of its own (else only counters): no prefix applies to it
    draw_generator draws;
    counts total;
    std::vector<counts> by_endpoint;
    std::string last_timeout_ms;
    std::string last_request_id;
    std::string last_traceparent;
    // The last traceparents that came (none counted when absent), a ring: one per attempt of a retried
    // or hedged call, for the tests of the gateway's spans.
    std::array<std::string, 8> traceparents;
    std::size_t traceparents_seen = 0;
    std::vector<std::pair<std::string, std::string>> last_headers;
    std::string last_accept_encoding;

    const path_config& config(std::size_t endpoint) const {
      const bool overridden = !overrides.empty() && overrides[endpoint];
      return overridden ? *overrides[endpoint] : shared;
    }
  };
  struct endpoint_state {
    unsigned short port = 0;
    counts total;  // guarded by mutex_
    std::atomic<std::int64_t> connections_open{0};
    std::atomic<std::uint64_t> connections_total{0};
  };

  using path_table = std::map<std::string, std::unique_ptr<path_entry>, std::less<>>;
  // Require mutex_. find_or_add returns null when the table is full; `seed_name` seeds a new entry's
  // delays. longest_prefix returns null when no prefix covers `name`.
  path_entry* find_or_add(path_table& table, std::string_view key, std::string_view seed_name);
  path_entry* longest_prefix(std::string_view name);
  microseconds draw_delay(const std::optional<latency>& delay, draw_generator& draws) const;

  const latency default_delay_;
  const std::uint64_t seed_;
  std::vector<std::string> recorded_names_;
  std::vector<endpoint_state> endpoints_;
  mutable std::mutex mutex_;
  path_table paths_;     // by path name: every path requested or configured, up to max_paths
  path_table prefixes_;  // by prefix ("seller/" for "seller/*"); only their settings and delays are used
  draw_generator default_draws_;  // for the paths not tracked; guarded by mutex_
  // Each distinct body and header text ever configured, kept for the registry's lifetime; guarded by mutex_.
  std::vector<std::unique_ptr<const body_template>> bodies_;
  std::vector<std::unique_ptr<const std::string>> texts_;
  std::size_t body_bytes_ = 0;  // of both; guarded by mutex_

  std::atomic<std::uint64_t> requests_{0};
  std::atomic<std::uint64_t> cancelled_{0};
  std::atomic<std::int64_t> connections_open_{0};
  std::atomic<std::uint64_t> connections_total_{0};
  std::atomic<std::uint64_t> tls_handshakes_{0};
  std::atomic<std::uint64_t> tls_resumed_{0};
};

}  // namespace mock
