#pragma once
// A JWKS fetched from an https:// URL (auth.jwt.jwks_url) and kept fresh, on a thread of its own (one
// io_context, one coroutine): fetched at once, then every `refresh`; a token with an unknown kid asks
// for a fetch (unknown_kid()), made at most once per `min_refresh`; a fetch that fails (refused,
// timed out after `fetch_timeout`, not 200, more than 1 MiB, not a usable JWKS) keeps the last good keys,
// is logged when the state changes, and is tried again after min_refresh.
//
// Threads: get() and unknown_kid() from any thread; the fetcher's own thread does the rest. A request
// holds the set get() gave it until it ends. The destructor stops the thread (an exchange in progress is
// abandoned) and joins it.

#include "gateway/auth/jwk_set.hpp"
#include "gateway/runtime/duration.hpp"
#include "gateway/tls/tls_client_context.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/spawn.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace gateway {

// Where and how often (config/edge_settings.hpp's jwt_settings, jwks_url).
struct jwks_location {
  std::string url;  // for logs
  std::string host;
  std::uint16_t port = 443;
  std::string target;
  std::shared_ptr<const tls_client_context> tls;
  microseconds refresh = std::chrono::minutes(5);
  microseconds min_refresh = std::chrono::seconds(5);
  microseconds timeout = std::chrono::seconds(5);
};

class jwks_fetcher {
 public:
  explicit jwks_fetcher(jwks_location where);
  jwks_fetcher(const jwks_fetcher&) = delete;
  jwks_fetcher& operator=(const jwks_fetcher&) = delete;
  ~jwks_fetcher();

  // Waits until the first good set has come, at most `bound`; false when it has not (then get() is null
  // until a later fetch succeeds). Blocks: never on an I/O thread.
  bool wait_first(microseconds bound);

  std::shared_ptr<const jwk_set> get() const { return keys_.load(std::memory_order_acquire); }
  // A token named a kid the set lacks: fetch again soon (once per min_refresh at most).
  void unknown_kid();

  const jwks_location& location() const { return where_; }
  std::uint64_t fetches(bool ok) const { return (ok ? succeeded_ : failed_).load(std::memory_order_relaxed); }

 private:
  void run();
  void run_loop(boost::asio::yield_context yield);

  const jwks_location where_;
  std::unique_ptr<boost::asio::io_context> ioc_;
  boost::asio::steady_timer wake_;  // the wait for the next fetch; an unknown kid cancels it
  std::atomic<std::shared_ptr<const jwk_set>> keys_;
  std::atomic<bool> asked_{false};  // unknown_kid() posted a wake not yet taken
  std::atomic<std::uint64_t> succeeded_{0};
  std::atomic<std::uint64_t> failed_{0};
  std::mutex first_lock_;
  std::condition_variable first_came_;
  bool first_ = false;
  std::thread thread_;
};

}  // namespace gateway
