#pragma once
// One downstream's circuit breaker, or one endpoint's of a downstream with several, shared by every I/O
// thread (breaker_settings says when it opens and closes). The fan-out asks the downstream's allow()
// before it starts a call and record()s the outcome with the ticket it got: a call refused by an open
// breaker falls back at once (outcome circuit_open) and costs no I/O. An endpoint's breaker is asked the
// same way by the lane when it picks the endpoint for an attempt (http_endpoints): an open one is left out.
//
//   closed --(failure ratio over the window, or N failures in a row)--> open
//   open --(cooldown passed, at the next call)--> half_open
//   half_open --(every probe call succeeded)--> closed;  --(a probe failed)--> open
//
// Every transition starts a new generation; an outcome recorded with a ticket of an older generation (a
// call started before the transition) counts for nothing. Callers record the verdict of the downstream's
// failure rule (failure_rule.hpp, breaker_verdict): error is a failure, ok a success, anything else counts
// neither way (a cancelled probe gives its place back). Each transition is logged once (warn when it opens,
// info otherwise) and counted.
//
// Thread safety: allow() in the closed state, or open within the cooldown, reads one or two atomics, and
// so does record() of a success while closed (plus one counter increment); everything else takes a mutex held
// for a few counter updates and, at a transition, one log line; never across I/O, a callback or a wake-up.

#include "gateway/config/config.hpp"
#include "gateway/downstream/call_result.hpp"
#include "gateway/runtime/duration.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace gateway {

class circuit_breaker {
 public:
  enum class state : std::uint8_t { closed = 0, half_open = 1, open = 2 };  // the metric's values

  struct ticket {
    std::uint32_t generation = 0;
    bool allowed = false;  // false: the breaker refused the call (nothing to record)
    bool probe = false;    // a half-open probe
  };

  // `endpoint`: empty for the downstream's own breaker, else the endpoint's address ("10.0.0.7:8080").
  circuit_breaker(std::string downstream, const breaker_settings& settings, std::string endpoint = {});

  ticket allow(clock::time_point now);
  void record(const ticket& t, call_outcome outcome, clock::time_point now);

  state current() const { return static_cast<state>(word_.load(std::memory_order_relaxed) & 3U); }
  std::uint64_t transitions_to(state s) const {
    return transitions_[static_cast<std::size_t>(s)].load(std::memory_order_relaxed);
  }
  const std::string& downstream() const { return downstream_; }
  const std::string& endpoint() const { return endpoint_; }
  const failure_rule& failures() const { return settings_.failures; }

 private:
  static constexpr std::size_t buckets = 10;  // the window in tenths
  // Counted without the lock by a success in the closed state when the bucket is current; started
  // again (slot, counts) under the lock. A count racing a restart may land in the wrong tenth: a breaker
  // decides on ratios over hundreds of calls, and one call more or less does not change that.
  struct bucket {
    std::atomic<std::int64_t> slot{-1};  // which tenth of time it counts (since epoch_), -1: unused
    std::atomic<std::uint32_t> calls{0};
    std::atomic<std::uint32_t> failures{0};
  };
  struct totals {
    std::uint32_t calls = 0;
    std::uint32_t failures = 0;
  };

  void enter(state to, clock::time_point now, const std::string& why);  // under the lock; logs it
  void count(bool failed, clock::time_point now);
  totals window_totals(clock::time_point now) const;
  std::int64_t slot_of(clock::time_point now) const;

  const std::string downstream_;
  const std::string endpoint_;
  const std::string subject_;  // in log lines: "downstream 'x'", or "endpoint a:p of downstream 'x'"
  const breaker_settings settings_;
  const clock::time_point epoch_;
  // generation << 2 | state: read without the lock by allow() and the metrics.
  std::atomic<std::uint32_t> word_{0};
  std::array<std::atomic<std::uint64_t>, 3> transitions_{};
  std::atomic<clock::rep> reopen_at_{0};  // while open: when the cooldown ends (since the clock's epoch)

  mutable std::mutex mutex_;  // guards what follows
  std::array<bucket, buckets> window_{};
  std::atomic<unsigned> consecutive_{0};
  unsigned probes_started_ = 0;
  unsigned probes_succeeded_ = 0;
};

std::string_view to_string(circuit_breaker::state s);

}  // namespace gateway
