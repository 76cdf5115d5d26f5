#include "gateway/downstream/circuit_breaker.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

namespace gateway {

namespace {

constexpr std::uint32_t state_bits = 3;

}  // namespace

std::string_view to_string(circuit_breaker::state s) {
  switch (s) {
    case circuit_breaker::state::closed:
      return "closed";
    case circuit_breaker::state::half_open:
      return "half_open";
    case circuit_breaker::state::open:
      return "open";
  }
  return "closed";
}

circuit_breaker::circuit_breaker(std::string downstream, const breaker_settings& settings,
                                 std::string endpoint)
    : downstream_(std::move(downstream)),
      endpoint_(std::move(endpoint)),
      subject_(endpoint_.empty() ? "downstream '" + downstream_ + "'"
                                 : "endpoint " + endpoint_ + " of downstream '" + downstream_ + "'"),
      settings_(settings),
      epoch_(clock::now()) {}

circuit_breaker::ticket circuit_breaker::allow(clock::time_point now) {
  const auto word = word_.load(std::memory_order_acquire);
  const auto now_state = static_cast<state>(word & state_bits);
  if (now_state == state::closed) return {word >> 2, true, false};
  if (now_state == state::open && now.time_since_epoch().count() < reopen_at_.load(std::memory_order_relaxed))
    return {};  // cooling down: refused without the lock
  std::lock_guard lock(mutex_);
  if (current() == state::open) {
    if (now.time_since_epoch().count() < reopen_at_.load(std::memory_order_relaxed)) return {};
    enter(state::half_open, now,
          "letting " + std::to_string(settings_.half_open_calls) + " probe calls through");
  }
  const auto generation = word_.load(std::memory_order_relaxed) >> 2;
  if (current() == state::closed) return {generation, true, false};
  if (probes_started_ >= settings_.half_open_calls) return {};
  ++probes_started_;
  return {generation, true, true};
}

void circuit_breaker::record(const ticket& t, call_outcome outcome, clock::time_point now) {
  if (!t.allowed) return;
  const bool failed = outcome == call_outcome::timeout || outcome == call_outcome::error;
  const bool succeeded = outcome == call_outcome::ok;
  if (succeeded && !t.probe) {  // the usual case: a success while closed, counted without the lock
    const auto word = word_.load(std::memory_order_acquire);
    if (t.generation != word >> 2) return;
    const auto slot = slot_of(now);
    auto& b = window_[static_cast<std::size_t>(slot) % buckets];
    if (static_cast<state>(word & state_bits) == state::closed &&
        b.slot.load(std::memory_order_relaxed) == slot) {
      b.calls.fetch_add(1, std::memory_order_relaxed);
      if (consecutive_.load(std::memory_order_relaxed) != 0) consecutive_.store(0, std::memory_order_relaxed);
      return;
    }
  }
  std::lock_guard lock(mutex_);
  if (t.generation != word_.load(std::memory_order_relaxed) >> 2) return;  // started before a transition
  switch (current()) {
    case state::closed: {
      if (!failed && !succeeded) return;
      count(failed, now);
      const unsigned run = failed ? consecutive_.load(std::memory_order_relaxed) + 1 : 0;
      consecutive_.store(run, std::memory_order_relaxed);
      if (!failed) return;
      if (settings_.consecutive_failures != 0 && run >= settings_.consecutive_failures) {
        enter(state::open, now, std::to_string(run) + " failures in a row");
        return;
      }
      const auto seen = window_totals(now);
      if (seen.calls >= settings_.min_calls &&
          std::uint64_t{seen.failures} * 100 >= std::uint64_t{seen.calls} * settings_.failure_percent) {
        enter(state::open, now,
              std::to_string(seen.failures) + " of " + std::to_string(seen.calls) + " calls failed in " +
                  format_duration(settings_.window));
      }
      return;
    }
    case state::half_open:
      if (failed) {
        enter(state::open, now, "a probe call failed");
      } else if (!succeeded) {
        if (t.probe && probes_started_ > 0) --probes_started_;  // cancelled: another probe may go
      } else if (t.probe && ++probes_succeeded_ >= settings_.half_open_calls) {
        enter(state::closed, now, std::to_string(probes_succeeded_) + " probe calls succeeded");
      }
      return;
    case state::open:
      return;
  }
}

void circuit_breaker::enter(state to, clock::time_point now, const std::string& why) {
  const auto generation = (word_.load(std::memory_order_relaxed) >> 2) + 1;
  if (to == state::open)  // before the state, which readers load first
    reopen_at_.store((now + settings_.cooldown).time_since_epoch().count(), std::memory_order_relaxed);
  word_.store(generation << 2 | static_cast<std::uint32_t>(to), std::memory_order_release);
  transitions_[static_cast<std::size_t>(to)].fetch_add(1, std::memory_order_relaxed);
  probes_started_ = 0;
  probes_succeeded_ = 0;
  switch (to) {
    case state::open:
      spdlog::warn("circuit of {} opened: {}; {} for {}", subject_, why,
                   endpoint_.empty() ? "its calls fall back at once" : "no attempt goes to it",
                   format_duration(settings_.cooldown));
      break;
    case state::half_open:
      spdlog::info("circuit of {} half-open: {}", subject_, why);
      break;
    case state::closed:
      for (auto& b : window_) {
        b.calls.store(0, std::memory_order_relaxed);
        b.failures.store(0, std::memory_order_relaxed);
        b.slot.store(-1, std::memory_order_relaxed);
      }
      consecutive_.store(0, std::memory_order_relaxed);
      spdlog::info("circuit of {} closed: {}", subject_, why);
      break;
  }
}

std::int64_t circuit_breaker::slot_of(clock::time_point now) const {
  const auto width = std::max<clock::duration::rep>(1, clock::duration(settings_.window).count() / buckets);
  return now <= epoch_ ? 0 : (now - epoch_).count() / width;
}

void circuit_breaker::count(bool failed, clock::time_point now) {
  const auto slot = slot_of(now);
  auto& b = window_[static_cast<std::size_t>(slot) % buckets];
  if (b.slot.load(std::memory_order_relaxed) != slot) {
    b.calls.store(0, std::memory_order_relaxed);
    b.failures.store(0, std::memory_order_relaxed);
    b.slot.store(slot, std::memory_order_relaxed);
  }
  b.calls.fetch_add(1, std::memory_order_relaxed);
  if (failed) b.failures.fetch_add(1, std::memory_order_relaxed);
}

circuit_breaker::totals circuit_breaker::window_totals(clock::time_point now) const {
  const auto slot = slot_of(now);
  totals t;
  for (const auto& b : window_) {
    const auto at = b.slot.load(std::memory_order_relaxed);
    if (at < 0 || at <= slot - static_cast<std::int64_t>(buckets)) continue;
    t.calls += b.calls.load(std::memory_order_relaxed);
    t.failures += b.failures.load(std::memory_order_relaxed);
  }
  return t;
}

}  // namespace gateway
