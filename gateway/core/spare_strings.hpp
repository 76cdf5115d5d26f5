#pragma once
// Buffers of freed strings kept per thread for the next string of the same use: every downstream answer's
// body is allocated when its length is known and freed once the aggregate is merged, on the same I/O
// thread. At most `max_kept` buffers of at most `max_bytes` each wait; others go back to malloc.

#include <cstddef>
#include <string>

namespace gateway::spare_strings {

inline constexpr std::size_t max_kept = 64;
inline constexpr std::size_t max_bytes = 16 * 1024;

// An empty string with room for at least `capacity` bytes, on a kept buffer when there is one.
std::string take(std::size_t capacity);
// Keeps the buffer of `s` for a later take() on this thread (or frees it).
void give(std::string&& s);

}  // namespace gateway::spare_strings
