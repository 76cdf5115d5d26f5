#pragma once
// A Boost.Context stack allocator: each stack is its own mapping with an inaccessible guard page below it
// (an overflow faults instead of corrupting memory), and only the pages a coroutine touches become
// resident (3-4 KiB for a call, about 8 KiB for a connection). Freed stacks are cached for reuse, so that
// the steady state maps nothing.
//
// A freed stack goes back to the cache of the thread that allocated it, whichever thread frees it: the
// acceptor's thread allocates every connection's stack and each connection ends on its own I/O thread,
// so a cache of the freeing thread would fill with stacks that thread never asks for, while the
// allocating thread mapped a new stack for every connection. A thread maps a stack only when none of
// its own is free, so the stacks it has mapped never outnumber the most of its coroutines alive at once,
// and its cache holds at most max_cached_per_thread() of them. The cache of a thread is unmapped when the
// thread ends; a stack of it freed after that is unmapped at once.

#include <boost/context/stack_context.hpp>

#include <cstddef>
#include <memory>

namespace gateway {

class stack_cache {
 public:
  explicit stack_cache(std::size_t size) : size_(size) {}

  // Throws std::bad_alloc when no mapping can be made (out of memory, or of vm.max_map_count).
  boost::context::stack_context allocate();
  // On any thread; for a stack this object allocated.
  void deallocate(boost::context::stack_context& sctx) noexcept;

  // Stacks kept per allocating thread at most (each keeps the pages it touched); beyond it freed stacks
  // are unmapped. Set once at start (server.stack_cache), before any I/O thread runs.
  static void set_max_cached_per_thread(std::size_t n);
  static std::size_t max_cached_per_thread();

 private:
  struct home;  // one allocating thread's cache
  static const std::shared_ptr<home>& this_thread_home();

  std::size_t size_;
  std::shared_ptr<home> home_;  // set by allocate(): where deallocate() returns the stack
};

}  // namespace gateway
