#pragma once
// The behaviour of every path (mode and delay) and the counters served by /__stats.
// Thread-safe: one mutex guards the path table (one short lookup per request); the global counters are
// relaxed atomics. Entries are never removed, so a ticket stays valid for the registry's lifetime.

#include "loadtest/mock/behaviour.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace mock {

// The request headers whose last values /__stats shows per path ("" when absent).
struct request_headers {
  std::string_view timeout_ms;   // X-Request-Timeout-Ms
  std::string_view request_id;   // X-Request-Id
  std::string_view traceparent;  // traceparent
};

class path_registry {
  struct path_entry;

 public:
  // Paths tracked individually. Requests to further names get the default behaviour and are counted only
  // in the global counters, so random names cannot grow memory without bound.
  static constexpr std::size_t max_paths = 1024;

  explicit path_registry(microseconds default_delay) : default_delay_(default_delay) {}

  // Sets the mode of `name`; an absent `delay` keeps the path's delay (the default delay for a new path).
  // Returns false when the table is full.
  bool configure(std::string_view name, mode how, std::optional<microseconds> delay);

  // One request to a downstream path: how to answer it, and where to count its cancellation.
  struct ticket {
    behaviour how;
    path_entry* entry = nullptr;  // null when the path is not tracked
  };
  ticket begin_request(std::string_view name, const request_headers& headers);
  // The client went away before the answer was written.
  void count_cancelled(const ticket& t);

  void connection_opened();
  void connection_closed();

  // Zeroes the request, cancellation and connection totals and the per-path data; keeps the modes and
  // the number of open connections.
  void reset();

  // {"requests":N,"cancelled":N,"connections_open":N,"connections_total":N,"paths":{NAME:{...}}}
  std::string stats_json() const;

 private:
  struct path_entry {
    mode how = mode::ok;
    std::optional<microseconds> delay;  // nullopt: the default delay
    std::uint64_t requests = 0;
    std::uint64_t cancelled = 0;
    std::string last_timeout_ms;
    std::string last_request_id;
    std::string last_traceparent;
  };

  // Requires mutex_; null when the table is full.
  path_entry* find_or_add(std::string_view name);

  const microseconds default_delay_;
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<path_entry>, std::less<>> paths_;

  std::atomic<std::uint64_t> requests_{0};
  std::atomic<std::uint64_t> cancelled_{0};
  std::atomic<std::int64_t> connections_open_{0};
  std::atomic<std::uint64_t> connections_total_{0};
};

}  // namespace mock
