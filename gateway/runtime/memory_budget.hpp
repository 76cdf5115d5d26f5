#pragma once
// The process-wide budget for buffered bytes: downstream answers being read and held until the merge.
// A read that would take the total over the budget fails its call (fallback, detail "memory budget
// exhausted"); while the total is at or over the budget, new requests are shed with 503. So a flood of
// large answers costs degraded entries and 503s, never an out-of-memory kill. Thread-safe (one relaxed
// atomic counter); a budget of 0 means unlimited.

#include <cstddef>

namespace gateway::memory_budget {

// Sets the budget (bytes; 0 = unlimited). Called once at start, before any I/O thread runs.
void configure(std::size_t bytes);
std::size_t limit();
std::size_t used();
// True while nothing more may be buffered: new requests are shed.
bool exhausted();

// Counts `n` more bytes if that stays within the budget; false (and nothing counted) otherwise.
bool try_charge(std::size_t n);
// Counts `n` bytes already held (they were charged elsewhere and change hands).
void force_charge(std::size_t n);
void release(std::size_t n);

// The default when limits.memory_budget is 0: half of the cgroup's memory limit when there is one, else
// half of the machine's memory.
std::size_t derive_default();

}  // namespace gateway::memory_budget
