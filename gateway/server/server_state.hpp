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
  server_phase phase() const { return phase_.load(); }
  // Moves the phase forward to `next`, unless it is there or beyond already; returns the phase it found
  // (before `next`: this call moved it; else somebody got there first). Thread-safe.
  server_phase advance(server_phase next) {
    auto now = phase_.load();
    while (now < next && !phase_.compare_exchange_weak(now, next)) {
    }
    return now;
  }

  std::atomic<std::size_t> inflight{0};     // requests being handled
  std::atomic<std::size_t> connections{0};  // open client connections
  // Whether the phase has reached ...; once true, each stays true.
  bool started() const { return phase_.load() >= server_phase::serving; }    // /startupz answers 200
  bool draining() const { return phase_.load() >= server_phase::draining; }  // /readyz answers 503
  bool closing() const { return phase_.load() >= server_phase::closing; }    // the listener has closed
  bool stopping() const { return phase_.load() >= server_phase::stopping; }  // everything is cancelled

 private:
  std::atomic<server_phase> phase_{server_phase::starting};
};

}  // namespace gateway
