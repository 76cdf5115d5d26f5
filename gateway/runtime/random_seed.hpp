#pragma once
// A seed for a thread's random generator from the kernel (getrandom). std::random_device would do the
// same but is an object of about 5 KB, on the stack while it is used: on a connection's coroutine stack it
// made the first request of each thread touch a stack page no other request needs.

#include <sys/random.h>

#include <chrono>
#include <cstdint>

namespace gateway {

inline std::uint64_t random_seed() {
  std::uint64_t seed = 0;
  if (::getrandom(&seed, sizeof seed, 0) != static_cast<ssize_t>(sizeof seed))  // not expected on Linux
    seed = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
           reinterpret_cast<std::uintptr_t>(&seed);
  return seed;
}

}  // namespace gateway
