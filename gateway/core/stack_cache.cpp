#include "gateway/core/stack_cache.hpp"

#include <cstdlib>
#include <new>
#include <vector>

#if defined(GATEWAY_SANITIZE)
#include <sanitizer/asan_interface.h>
#endif

namespace gateway {
namespace {

struct cached_stack {
  void* base;
  std::size_t size;
};

// Freed stacks of this thread; released when the thread ends.
struct thread_cache {
  std::vector<cached_stack> stacks;
  ~thread_cache() {
    for (auto& s : stacks) std::free(s.base);
  }
};

thread_local thread_cache cache;

}  // namespace

boost::context::stack_context stack_cache::allocate() {
  auto& stacks = cache.stacks;
  for (std::size_t i = stacks.size(); i-- > 0;) {
    if (stacks[i].size != size_) continue;
    void* base = stacks[i].base;
    stacks[i] = stacks.back();
    stacks.pop_back();
    boost::context::stack_context sctx;
    sctx.size = size_;
    sctx.sp = static_cast<char*>(base) + size_;
    return sctx;
  }
  void* base = std::malloc(size_);
  if (base == nullptr) throw std::bad_alloc();
  boost::context::stack_context sctx;
  sctx.size = size_;
  sctx.sp = static_cast<char*>(base) + size_;
  return sctx;
}

void stack_cache::deallocate(boost::context::stack_context& sctx) noexcept {
  void* base = static_cast<char*>(sctx.sp) - sctx.size;
#if defined(GATEWAY_SANITIZE)
  ASAN_UNPOISON_MEMORY_REGION(base, sctx.size);
#endif
  auto& stacks = cache.stacks;
  if (stacks.size() < max_cached_per_thread) {
    try {
      stacks.push_back({base, sctx.size});
      return;
    } catch (...) {
    }
  }
  std::free(base);
}

}  // namespace gateway
