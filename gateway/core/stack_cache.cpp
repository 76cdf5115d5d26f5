#include "gateway/core/stack_cache.hpp"

#include <sys/mman.h>
#include <unistd.h>

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

const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

// A mapping of `size` usable bytes above one guard page; returns the usable base.
void* map_stack(std::size_t size) {
  void* mapping = ::mmap(nullptr, size + page, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED) throw std::bad_alloc();
  if (::mprotect(mapping, page, PROT_NONE) != 0) {
    ::munmap(mapping, size + page);
    throw std::bad_alloc();
  }
  return static_cast<char*>(mapping) + page;
}

void unmap_stack(void* base, std::size_t size) {
  ::munmap(static_cast<char*>(base) - page, size + page);
}

// Freed stacks of this thread; released when the thread ends.
struct thread_cache {
  std::vector<cached_stack> stacks;
  ~thread_cache() {
    for (auto& s : stacks) unmap_stack(s.base, s.size);
  }
};

thread_local thread_cache cache;

}  // namespace

boost::context::stack_context stack_cache::allocate() {
  size_ = (size_ + page - 1) / page * page;  // whole pages
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
  void* base = map_stack(size_);
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
  unmap_stack(base, sctx.size);
}

}  // namespace gateway
