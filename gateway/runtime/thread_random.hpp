#pragma once
// Random 64-bit numbers from the calling thread's generator (a std::mt19937_64, seeded once per thread
// from the kernel's getrandom): request ids, trace and span ids. Not for secrets. std::random_device would
// seed it as well, but it is an object of about 5 KB on the stack while it is used: on a connection's
// coroutine stack it made each thread's first request touch a stack page no other request needs.

#include <cstdint>

namespace gateway {

std::uint64_t thread_random();

}  // namespace gateway
