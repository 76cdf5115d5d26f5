#pragma once
// One I/O thread's share of an HTTP downstream: its connection pool and what the thread's calls decide
// retries and hedges by (calls and retries in flight, recent hedges, recent good latencies). Owned by
// http_downstream, one per I/O thread, and used only on that thread: no locking.
// Include only from downstream implementation files: it pulls in Beast (connection_pool).

#include "gateway/config/config.hpp"
#include "gateway/downstream/connection_pool.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <random>

namespace gateway {

class http_lane {
 public:
  http_lane(boost::asio::any_io_executor ex, std::shared_ptr<const resolved_address> address, std::size_t cap,
            const downstream_settings& settings);

  connection_pool& pool() { return pool_; }
  const downstream_settings& settings() const { return settings_; }

  // A call starts and ends (every call, for the retry budget).
  void call_started(clock::time_point now);
  void call_ended() { --calls_; }

  // Takes a place for a retry when the retry budget has one (give it back with retry_ended()).
  bool try_retry();
  void retry_ended() { --retries_; }

  // Takes a hedge when the hedge budget allows one more (hedges over the last 10 s against calls).
  bool try_hedge(clock::time_point now);
  // How long a call waits before its hedge: the fixed delay, or the percentile of recent good latencies
  // (max_delay until there are enough of them), within [min_delay, max_delay].
  clock::duration hedge_delay() const;
  // A good answer's latency, for the percentile.
  void record_latency(clock::duration latency);

  // A uniformly random duration in [0, limit].
  clock::duration jitter(clock::duration limit);

  // Retries and hedges started so far (read by the metrics on another thread).
  std::uint64_t retries() const { return retries_total_.load(std::memory_order_relaxed); }
  std::uint64_t hedges() const { return hedges_total_.load(std::memory_order_relaxed); }

 private:
  void roll_window(clock::time_point now);

  connection_pool pool_;
  const downstream_settings& settings_;
  unsigned calls_ = 0;
  unsigned retries_ = 0;
  // Calls and hedges in two 5 s buckets: the current one and the one before.
  std::int64_t bucket_ = 0;
  std::array<unsigned, 2> window_calls_{};
  std::array<unsigned, 2> window_hedges_{};
  // The last good latencies (a ring) and the percentile of them, recomputed every few samples.
  static constexpr std::size_t samples = 128;
  std::array<clock::duration, samples> latencies_{};
  std::size_t recorded_ = 0;
  clock::duration percentile_{};
  std::minstd_rand random_;
  std::atomic<std::uint64_t> retries_total_{0};
  std::atomic<std::uint64_t> hedges_total_{0};
};

}  // namespace gateway
