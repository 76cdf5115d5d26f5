#pragma once
// How long a path waits before it answers: one delay ("150ms"), or a delay with a tail ("150ms,p98=700ms":
// 98% of the requests wait 150 ms, the slowest 2% wait 700 ms; up to four tail terms, e.g.
// "100ms,p90=300ms,p99=900ms"). Which request lands in the tail is decided by a draw from a small seeded
// generator, so that a run can be repeated. Pure, no I/O.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mock {

using std::chrono::microseconds;

struct latency {
  static constexpr std::size_t max_tail = 4;
  // Percentiles are kept in millionths of the requests: p99.9 is 999'000.
  static constexpr std::uint32_t draws = 1'000'000;

  struct tail_term {
    std::uint32_t from = 0;  // the requests whose draw is at least `from` ...
    microseconds delay{0};   // ... wait this long, unless a later term takes them
    friend bool operator==(const tail_term&, const tail_term&) = default;
  };

  microseconds base{0};
  std::array<tail_term, max_tail> tail{};
  std::size_t tail_size = 0;

  bool has_tail() const { return tail_size != 0; }
  // The delay of a request whose draw is `draw` (in [0, draws)).
  microseconds pick(std::uint32_t draw) const;

  friend bool operator==(const latency&, const latency&) = default;
};

// Parses "DURATION[,pP=DURATION]...": P a percentile strictly between 0 and 100 with at most four
// decimals, increasing from term to term; a tail delay is never shorter than the delay before it.
// Returns nullopt and sets `error` for anything else.
std::optional<latency> parse_latency(std::string_view text, std::string& error);

// SplitMix64: one word of state and the same sequence on every platform and standard library.
class draw_generator {
 public:
  explicit draw_generator(std::uint64_t seed = 0) : state_(seed) {}
  std::uint64_t next();
  // A draw in [0, latency::draws).
  std::uint32_t next_draw() { return static_cast<std::uint32_t>(((next() >> 32) * latency::draws) >> 32); }

 private:
  std::uint64_t state_;
};

// The seed of one path's generator: the run's seed mixed with the path's name, so that a path's sequence
// does not depend on the traffic of the others.
std::uint64_t path_seed(std::uint64_t seed, std::string_view name);

}  // namespace mock
