#pragma once
// What the I/O threads, the acceptor, the drain and the admin probes share across threads: two counts and
// the process's lifecycle phase. Plain atomics; the phase only ever moves forward (advance()), so each
// phase includes the ones before it: a stop without a drain reads as draining and closing too (its
// listener closes as well). The phase is read and written in sequentially consistent order, as the
// flags it replaced were; no reader is on a path where a weaker order would save anything.

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gateway {

// The process's lifecycle, in the order it goes through it (a phase may be skipped: a stop comes at
// any time, a drain before run() goes straight on from starting):
enum class server_phase : std::uint8_t {
  starting,  // constructed; run() has not queued the accept loop yet: /startupz and /readyz answer 503
  serving,   // the accept loop is queued: /startupz answers 200
  draining,  // drain() was called (first SIGTERM): /readyz answers 503, serving goes on
  closing,   // the drain closed the listener: finish up, keep nothing alive
  stopping,  // stop() was called: everything is being cancelled
};

struct server_state {
  // True once the phase has reached `at`; once true, it stays true. Read as a flag: `if (state.stopping)`.
  class reached {
   public:
    constexpr reached(const std::atomic<server_phase>& phase, server_phase at) : phase_(phase), at_(at) {}
    explicit operator bool() const { return phase_.load() >= at_; }

   private:
    const std::atomic<server_phase>& phase_;  // the server_state's own
    server_phase at_;
  };

  server_state() = default;
  server_state(const server_state&) = delete;  // the readers refer to this one's phase
  server_state& operator=(const server_state&) = delete;

  server_phase phase() const { return phase_.load(); }
  // Moves the phase forward to `next`, unless it is there or beyond already; returns the phase it found
  // (before `next`: this call moved it; else somebody got there first). Thread-safe.
  server_phase advance(server_phase next) {
    auto now = phase_.load();
    while (now < next && !phase_.compare_exchange_weak(now, next)) {
    }
    return now;
  }

  std::atomic<std::size_t> inflight{0};                    // requests being handled
  std::atomic<std::size_t> connections{0};                 // open client connections
  const reached started{phase_, server_phase::serving};    // from serving on: /startupz answers 200
  const reached draining{phase_, server_phase::draining};  // from draining on: /readyz answers 503
  const reached closing{phase_, server_phase::closing};    // from closing on: the listener has closed
  const reached stopping{phase_, server_phase::stopping};  // everything is being cancelled

 private:
  std::atomic<server_phase> phase_{server_phase::starting};
};

}  // namespace gateway
