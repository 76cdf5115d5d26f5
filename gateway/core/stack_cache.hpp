#pragma once
// A Boost.Context stack allocator: each stack is its own mapping with an inaccessible guard page below it
// (an overflow faults instead of corrupting memory), and only the pages a coroutine touches become
// resident (3-4 KiB for a call, about 8 KiB for a connection). Freed stacks go to a per-thread cache, so
// that the steady state maps nothing: every request spawns one coroutine per downstream call.

#include <boost/context/stack_context.hpp>

#include <cstddef>

namespace gateway {

class stack_cache {
 public:
  explicit stack_cache(std::size_t size) : size_(size) {}

  boost::context::stack_context allocate();
  void deallocate(boost::context::stack_context& sctx) noexcept;

  // Stacks kept per thread at most (each keeps the pages it touched); beyond it freed stacks are unmapped.
  static constexpr std::size_t max_cached_per_thread = 1024;

 private:
  std::size_t size_;
};

}  // namespace gateway
