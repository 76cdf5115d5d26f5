#pragma once
// One I/O thread's share of an HTTP downstream: its endpoints (one per address, each with its own
// connection pool), how attempts are spread over them (power of two choices on attempts in flight,
// outlier ejection), and what the thread's calls decide retries and hedges by (calls and retries in
// flight, recent hedges, recent good latencies). Owned by http_downstream, one per I/O thread, and used
// only on that thread: no locking, except reading the metrics' counters.
//
// With several endpoints, each also has a circuit breaker of its own (endpoint_breakers, shared by the
// lanes): an endpoint whose breaker refuses is left out like an ejected one, and when every endpoint's
// breaker refuses, the attempt is not made (the call ends circuit_open). A lone endpoint's breaker is
// never asked: the downstream's own breaker judges the same calls.
//
// Endpoints follow the downstream's addresses (host_resolver): at each pick the lane checks whether any
// changed (one atomic load per source); a new address gets an endpoint, one that went away is retired
// (its idle connections closed, the rest closed as they come back) and freed once no attempt uses it.
// Include only from downstream implementation files: it pulls in Beast (connection_pool).

#include "gateway/config/config.hpp"
#include "gateway/downstream/call_coalescer.hpp"
#include "gateway/downstream/circuit_breaker.hpp"
#include "gateway/downstream/connection_pool.hpp"
#include "gateway/downstream/host_resolver.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

namespace gateway {

class endpoint_breakers;

class http_endpoints {
 public:
  struct endpoint {
    endpoint(const boost::asio::any_io_executor& ex, const boost::asio::ip::tcp::endpoint& to,
             std::size_t cap, std::size_t connecting_cap, const downstream_settings& settings,
             tls_handshake_counts& handshakes);

    boost::asio::ip::tcp::endpoint address;
    connection_pool pool;
    unsigned in_flight = 0;  // attempts using it
    unsigned failures = 0;   // in a row
    unsigned ejections = 0;  // so far: the next lasts one base_time longer
    clock::time_point ejected_until{};
    bool removed = false;  // no longer an address of the downstream: retired, freed once unused
    std::shared_ptr<circuit_breaker> breaker;  // this address's, shared with the other lanes; may be null
  };

  // Where an attempt goes (pick()).
  struct choice {
    endpoint* to = nullptr;          // null: no address yet, or every endpoint's breaker refused
    circuit_breaker::ticket ticket;  // from `to`'s breaker, when it was asked (several endpoints)
    bool refused = false;            // null because every endpoint's breaker refused
  };

  // `sources`: the url's host, or each configured endpoint; `cap`: connections per endpoint, at most
  // `connecting_cap` of them connecting at once (connection_pool); `breakers`: the endpoints' circuit
  // breakers (null: none), which must outlive the lane.
  http_endpoints(boost::asio::any_io_executor ex,
                 std::vector<std::shared_ptr<const resolved_address>> sources, std::size_t cap,
                 std::size_t connecting_cap, const downstream_settings& settings,
                 endpoint_breakers* breakers);

  const boost::asio::any_io_executor& executor() const { return ex_; }
  // Identical calls in flight share one (settings.coalesce); null when off.
  call_coalescer* coalescer() { return coalescer_.get(); }
  void enable_coalescing(call_coalescer::starter start_call) {
    coalescer_ = std::make_unique<call_coalescer>(ex_, std::move(start_call));
  }
  const downstream_settings& settings() const { return settings_; }

  // The endpoint for a new attempt: of those neither ejected nor `avoid` (another attempt's), the one
  // with fewer attempts in flight of two picked at random, if its breaker allows (else the next pick);
  // ejected ones and then `avoid` only when nothing else is left. Counted in flight until
  // attempt_ended().
  choice pick(clock::time_point now, const endpoint* avoid);
  // The attempt on `e` ended, with `ticket` from its pick; `failed`: it failed in a way that counts
  // against the endpoint; `good`: it answered well (neither: it was cancelled, or answered 4xx).
  void attempt_ended(endpoint& e, const circuit_breaker::ticket& ticket, bool failed, bool good,
                     clock::time_point now);
  void close_idle();

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

  // Retries, hedges and ejections so far, and the endpoints now (read by the metrics on another thread).
  std::uint64_t retries() const { return retries_total_.load(std::memory_order_relaxed); }
  std::uint64_t hedges() const { return hedges_total_.load(std::memory_order_relaxed); }
  std::uint64_t ejections() const { return ejections_total_.load(std::memory_order_relaxed); }
  unsigned endpoint_count() const { return endpoint_count_.load(std::memory_order_relaxed); }
  // TLS handshakes made by the lane's pools (https), full and resumed.
  const tls_handshake_counts& handshakes() const { return handshakes_; }

 private:
  void roll_window(clock::time_point now);
  void refresh();
  void eject(endpoint& e, clock::time_point now);

  boost::asio::any_io_executor ex_;
  std::vector<std::shared_ptr<const resolved_address>> sources_;
  std::uint64_t seen_ = ~std::uint64_t{0};  // the sum of the sources' generations at the last refresh
  // Every source an IP literal: the endpoints are made at the first pick and never looked at again (no
  // read of the sources, which other threads share, per call).
  bool fixed_ = false;
  std::size_t cap_;
  std::size_t connecting_cap_;
  std::vector<std::unique_ptr<endpoint>> endpoints_;
  std::size_t retired_ = 0;  // removed endpoints not freed yet
  std::size_t live_ = 0;     // endpoints not removed
  const downstream_settings& settings_;
  endpoint_breakers* breakers_;
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
  std::atomic<std::uint64_t> ejections_total_{0};
  std::atomic<unsigned> endpoint_count_{0};
  tls_handshake_counts handshakes_;
  std::unique_ptr<call_coalescer> coalescer_;
};

}  // namespace gateway
