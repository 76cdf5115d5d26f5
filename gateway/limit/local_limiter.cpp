#include "gateway/limit/local_limiter.hpp"

#include <algorithm>
#include <cmath>

namespace gateway {

namespace {

std::int64_t nanos(clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

microseconds to_micros(std::int64_t ns) {
  return microseconds((std::max<std::int64_t>(ns, 0) + 999) / 1000);
}

}  // namespace

local_limiter::local_limiter(double per_second, double bucket, std::size_t max_keys)
    : interval_ns_(std::max<std::int64_t>(1, std::llround(1e9 / per_second))),
      tolerance_ns_(std::llround((std::max(bucket, 1.0) - 1.0) * 1e9 / per_second)),
      max_per_shard_(std::max<std::size_t>(1, max_keys / shard_count)) {}

limit_verdict local_limiter::admit(std::string_view key, clock::time_point when) {
  const auto now = nanos(when);
  const auto hash = key_hash{}(key);
  auto& s = shards_[(hash >> 7) % shard_count];  // not the low bits the shard's own table uses
  std::lock_guard guard(s.lock);
  auto it = s.tat.find(key);
  if (it == s.tat.end()) {
    if (s.tat.size() >= max_per_shard_) make_room(s, now);
    it = s.tat.emplace(std::string(key), now).first;
  }
  const auto start = std::max(it->second, now);  // an idle key's bucket is full
  limit_verdict v;
  if (start - now > tolerance_ns_) {
    v.allowed = false;
    v.retry_after = to_micros(start - tolerance_ns_ - now);
    v.reset = to_micros(start - now);
    return v;
  }
  it->second = start + interval_ns_;
  v.remaining = static_cast<double>((tolerance_ns_ - (start - now)) / interval_ns_);
  v.reset = to_micros(it->second - now);
  return v;
}

void local_limiter::make_room(shard& s, std::int64_t now) {
  auto nearest = s.tat.end();
  for (auto it = s.tat.begin(); it != s.tat.end();) {
    if (it->second <= now) {  // full again: forgetting it changes nothing
      it = s.tat.erase(it);
      continue;
    }
    if (nearest == s.tat.end() || it->second < nearest->second) nearest = it;
    ++it;
  }
  if (s.tat.size() >= max_per_shard_ && nearest != s.tat.end()) s.tat.erase(nearest);
}

std::size_t local_limiter::keys() const {
  std::size_t n = 0;
  for (const auto& s : shards_) {
    std::lock_guard guard(s.lock);
    n += s.tat.size();
  }
  return n;
}

}  // namespace gateway
