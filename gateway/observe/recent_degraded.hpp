#pragma once
// The last few degraded responses, for the admin status page: request id, route, time and why each
// failed call failed. Bounded (the oldest entry makes room); recorded only when a response is degraded,
// so healthy requests pay nothing. Thread-safe: I/O threads record under a mutex, the admin thread copies
// the entries out. Owned by the server; the request handlers and the admin thread hold plain pointers.

#include "gateway/config/config.hpp"
#include "gateway/downstream/call_result.hpp"

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace gateway {

class recent_degraded {
 public:
  struct call {
    std::string name;        // the call
    std::string downstream;  // its downstream
    std::string outcome;     // outcome_label: "timeout", "circuit_open", "status_5xx", ...
    std::string detail;      // the short reason, e.g. "connect refused"
    double latency_ms = 0;
  };
  struct entry {
    std::string request_id;
    std::string route;        // the route's path as configured
    double time = 0;          // Unix time, seconds
    std::vector<call> calls;  // the calls that did not answer ok, in call order
  };

  static constexpr std::size_t default_capacity = 20;
  explicit recent_degraded(std::size_t capacity = default_capacity);

  // Keeps a degraded response of the route at `path`: its calls whose result is not ok. `results` aligned
  // with route.calls.
  void record(std::string_view request_id, std::string_view path, const aggregate_route& route,
              const std::vector<call_result>& results);

  // The entries kept, newest first.
  std::vector<entry> newest_first() const;
  std::uint64_t recorded() const;  // since the start, kept or not
  std::size_t capacity() const { return capacity_; }

 private:
  const std::size_t capacity_;
  mutable std::mutex lock_;
  std::vector<entry> ring_;  // up to capacity_, written at next_ % capacity_
  std::uint64_t next_ = 0;   // entries recorded
};

}  // namespace gateway
