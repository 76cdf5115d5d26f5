// The server's lifecycle phase: it only moves forward, and each reader answers as the flag it replaced
// did along the ways a process goes (a drain then a stop; a stop at once; a drain before run()).

#include "gateway/server/server_state.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

using namespace gateway;

namespace {

struct flags {
  bool started, draining, closing, stopping;
  bool operator==(const flags&) const = default;
};

flags flags_of(const server_state& s) {
  return {s.started(), s.draining(), s.closing(), s.stopping()};
}

}  // namespace

TEST_CASE("server state: a drain, then the stop") {
  server_state s;
  CHECK(s.phase() == server_phase::starting);
  CHECK(flags_of(s) == flags{false, false, false, false});
  CHECK(s.advance(server_phase::serving) == server_phase::starting);
  CHECK(flags_of(s) == flags{true, false, false, false});
  CHECK(s.advance(server_phase::draining) == server_phase::serving);   // the drain begins
  CHECK(s.advance(server_phase::draining) == server_phase::draining);  // a second drain() does nothing
  CHECK(flags_of(s) == flags{true, true, false, false});
  CHECK(s.advance(server_phase::closing) == server_phase::draining);
  CHECK(flags_of(s) == flags{true, true, true, false});
  CHECK(s.advance(server_phase::stopping) == server_phase::closing);
  CHECK(s.advance(server_phase::stopping) == server_phase::stopping);  // a second stop() does nothing
  CHECK(flags_of(s) == flags{true, true, true, true});
}

TEST_CASE("server state: the phase never moves back") {
  server_state s;
  s.advance(server_phase::stopping);  // a stop at once: it reads as draining and closing too
  CHECK(flags_of(s) == flags{true, true, true, true});
  CHECK(s.advance(server_phase::serving) == server_phase::stopping);  // run() after it
  CHECK(s.advance(server_phase::draining) == server_phase::stopping);
  CHECK(s.advance(server_phase::closing) == server_phase::stopping);
  CHECK(s.phase() == server_phase::stopping);

  server_state early;
  early.advance(server_phase::draining);  // a drain before run(): not started yet
  CHECK(flags_of(early) == flags{true, true, false, false});
  CHECK(early.advance(server_phase::serving) == server_phase::draining);
  CHECK(early.phase() == server_phase::draining);
}

TEST_CASE("server state: of threads racing to move it, the furthest wins and each move happens once") {
  for (int round = 0; round < 50; ++round) {
    server_state s;
    const server_phase targets[] = {server_phase::serving, server_phase::draining, server_phase::closing,
                                    server_phase::stopping};
    std::atomic<int> moved_to_stopping{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        const auto next = targets[t % 4];
        if (s.advance(next) < next && next == server_phase::stopping) moved_to_stopping.fetch_add(1);
      });
    }
    for (auto& t : threads) t.join();
    CHECK(s.phase() == server_phase::stopping);
    CHECK(moved_to_stopping.load() == 1);
  }
}
