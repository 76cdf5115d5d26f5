#pragma once
// A Boost.Context stack allocator that keeps freed stacks in a small per-thread cache.
// Every request spawns one coroutine per downstream call; without the cache each spawn mallocs and frees
// a whole stack, and the heap grows and shrinks (brk, page faults) with every request.

#include <boost/context/stack_context.hpp>

#include <cstddef>

namespace gateway {

class stack_cache {
 public:
  explicit stack_cache(std::size_t size) : size_(size) {}

  boost::context::stack_context allocate();
  void deallocate(boost::context::stack_context& sctx) noexcept;

  // Stacks kept per thread at most; beyond it freed stacks go back to the heap.
  static constexpr std::size_t max_cached_per_thread = 256;

 private:
  std::size_t size_;
};

}  // namespace gateway
