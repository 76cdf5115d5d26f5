#include "gateway/runtime/thread_random.hpp"

#include <sys/random.h>

#include <chrono>
#include <random>

namespace gateway {

namespace {

std::uint64_t kernel_seed() {
  std::uint64_t seed = 0;
  if (::getrandom(&seed, sizeof seed, 0) != static_cast<ssize_t>(sizeof seed))  // not expected on Linux
    seed = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
           reinterpret_cast<std::uintptr_t>(&seed);
  return seed;
}

}  // namespace

std::uint64_t thread_random() {
  thread_local std::mt19937_64 generator{kernel_seed()};
  return generator();
}

}  // namespace gateway
