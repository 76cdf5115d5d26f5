#pragma once
// One rate limit's buckets in this process: a token bucket per key, kept as GCRA's theoretical arrival
// time (one number per key). With `per_second` r and `bucket` b, a key that has been idle is admitted b
// times at once, then once every 1/r seconds; a refused request takes no token.
//
// Threads: admit() is called from every I/O thread. Keys are spread over shards, each behind a mutex held
// only for the lookup and the arithmetic (no I/O, no allocation but a new key's), so the count is exact
// across threads: no over-admission. At most `max_keys` keys are tracked; beyond it, keys whose bucket is
// full again are forgotten first (which changes nothing: a full bucket is what an unknown key gets), and
// when none is, the one nearest to full goes, which can admit that key up to its whole burst early.

#include "gateway/runtime/duration.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace gateway {

struct limit_verdict {
  bool allowed = true;
  double remaining = 0;         // whole tokens left after this request
  microseconds retry_after{0};  // refused: when one token will be there
  microseconds reset{0};        // when the bucket is full again
};

class local_limiter {
 public:
  local_limiter(double per_second, double bucket, std::size_t max_keys);
  local_limiter(const local_limiter&) = delete;
  local_limiter& operator=(const local_limiter&) = delete;

  limit_verdict admit(std::string_view key, clock::time_point now);

  std::size_t keys() const;  // tracked now (for tests and /status)

 private:
  static constexpr std::size_t shard_count = 16;
  struct key_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view k) const { return std::hash<std::string_view>{}(k); }
  };
  struct shard {
    mutable std::mutex lock;
    std::unordered_map<std::string, std::int64_t, key_hash, std::equal_to<>>
        tat;  // key -> theoretical arrival time (ns, steady)
  };
  void make_room(shard& s, std::int64_t now);

  const std::int64_t interval_ns_;   // one token
  const std::int64_t tolerance_ns_;  // (bucket - 1) tokens
  const std::size_t max_per_shard_;
  std::array<shard, shard_count> shards_;
};

}  // namespace gateway
