#pragma once
// Cluster-wide rate limiting: every gateway replica asks Redis whether a request under a key is admitted,
// by the generic cell rate algorithm (GCRA) in one Lua script, one round trip. The script takes Redis's
// own clock (TIME), so the replicas' clocks do not matter, and keeps one value per key: its theoretical
// arrival time (TAT), set only when a request is admitted and expiring when the key is idle again.
//
// Semantics, for a limit of `rate_per_second` r and `burst` b (emission interval T = 1/r):
// - from idle (the key absent or expired), floor(b) requests of cost 1 are admitted at once, then one
//   every T; a request of cost c counts as c requests (all or nothing);
// - `remaining`: how many more requests of cost 1 would be admitted right now, after this one;
// - `retry_after`: when refused, the time until this request (its cost) would be admitted; 0 if admitted;
// - `reset`: the time until the key is back to idle (all of the burst available again).
// Times are rounded up to whole milliseconds; T is rounded to whole microseconds (at least 1).
// A limit that can never admit the request (r <= 0, b < 1 or c > b) refuses it with retry_after -1 ms,
// without asking Redis.
//
// Errors are values: `timeout` when Redis did not answer by the deadline (or the links' timeout),
// `unavailable` when the link is down, saturated, or Redis answered with an error; the caller decides
// whether to admit then (fail open) or refuse. Keys are used as given (the caller prefixes them).
//
// Threads: one redis_link (or `connections_per_thread`) per I/O thread; admit() runs in a request's
// coroutine on I/O thread `thread_index` and uses only that thread's links. The limiter must outlive the
// requests that use it, and be destroyed before the io_contexts (its destructor posts each link's close()
// to them); its links outlive it until their coroutines end (see redis_link.hpp).

#include "gateway/limit/redis_link.hpp"
#include "gateway/limit/redis_settings.hpp"
#include "gateway/runtime/duration.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/spawn.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gateway {

struct gcra_limit {
  double rate_per_second = 1;
  double burst = 1;  // tokens: requests of cost 1 admitted at once from idle
  std::uint32_t cost = 1;
};

struct redis_verdict {
  using status = redis_status;  // ok, timeout, unavailable
  status state = status::unavailable;
  bool allowed = false;  // meaningful when state == ok
  std::int64_t remaining = 0;
  std::chrono::milliseconds retry_after{0};
  std::chrono::milliseconds reset{0};
};

class redis_limiter {
 public:
  // `threads`: the executors of the I/O threads, in thread order (thread_index is a position in it).
  // Null with `error` set when the TLS settings do not load (a CA file missing or not PEM).
  static std::unique_ptr<redis_limiter> make(const std::vector<boost::asio::any_io_executor>& threads,
                                             const redis_settings& settings, std::string& error);
  redis_limiter(const redis_limiter&) = delete;
  redis_limiter& operator=(const redis_limiter&) = delete;
  ~redis_limiter();  // close()

  // Whether one request of `limit.cost` under `key` is admitted now. Call on I/O thread `thread_index`.
  redis_verdict admit(std::size_t thread_index, std::string_view key, const gcra_limit& limit,
                      clock::time_point deadline, boost::asio::yield_context yield);

  // Closes every link (posted to its thread; callable from any thread). Idempotent.
  void close();

  std::size_t threads() const { return threads_.size(); }
  // A link of a thread, for its counters (readable from any thread) and state (on its thread only).
  const redis_link& link(std::size_t thread_index, std::size_t k = 0) const {
    return *threads_[thread_index].links[k];
  }
  std::size_t links_per_thread() const { return threads_.empty() ? 0 : threads_.front().links.size(); }

  // The GCRA script and its SHA1 (hex), as sent with EVAL and EVALSHA.
  static const std::string& script();
  static const std::string& script_sha1();

 private:
  struct thread_links {
    boost::asio::any_io_executor ex;
    std::vector<std::shared_ptr<redis_link>> links;
    std::size_t next = 0;  // round robin, on the thread only
  };

  redis_limiter() = default;

  std::vector<thread_links> threads_;
};

}  // namespace gateway
