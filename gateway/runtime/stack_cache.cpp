#include "gateway/runtime/stack_cache.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
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

std::atomic<std::size_t> max_cached{1024};

}  // namespace

// The freed stacks of one allocating thread. Its own thread takes and gives back stacks, other threads
// give back the stacks it allocated for coroutines that ended there: the mutex is taken once per
// coroutine start and end, and is rarely contended. Owned jointly by its thread and by the allocators of
// its stacks still in use, so that a stack freed after the thread ended finds it (closed) and is unmapped.
struct stack_cache::home {
  std::mutex mutex;
  std::vector<cached_stack> stacks;  // guarded by mutex
  bool closed = false;               // the thread ended: stacks given back now are unmapped

  // Unmaps everything kept; later gives unmap their stack.
  void close() {
    std::vector<cached_stack> kept;
    {
      std::lock_guard lock(mutex);
      closed = true;
      kept.swap(stacks);
    }
    for (auto& s : kept) unmap_stack(s.base, s.size);
  }
};

// This thread's cache, made by its first allocation and closed when the thread ends.
const std::shared_ptr<stack_cache::home>& stack_cache::this_thread_home() {
  struct closer {
    std::shared_ptr<home> h = std::make_shared<home>();
    ~closer() { h->close(); }
  };
  thread_local closer mine;
  return mine.h;
}

void stack_cache::set_max_cached_per_thread(std::size_t n) {
  max_cached.store(n, std::memory_order_relaxed);
}

std::size_t stack_cache::max_cached_per_thread() {
  return max_cached.load(std::memory_order_relaxed);
}

boost::context::stack_context stack_cache::allocate() {
  size_ = (size_ + page - 1) / page * page;  // whole pages
  home_ = this_thread_home();
  void* base = nullptr;
  {
    std::lock_guard lock(home_->mutex);
    auto& stacks = home_->stacks;
    for (std::size_t i = stacks.size(); i-- > 0;) {
      if (stacks[i].size != size_) continue;
      base = stacks[i].base;
      stacks[i] = stacks.back();
      stacks.pop_back();
      break;
    }
  }
  if (base == nullptr) base = map_stack(size_);
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
  if (home_) {
    std::lock_guard lock(home_->mutex);
    auto& stacks = home_->stacks;
    if (!home_->closed && stacks.size() < max_cached.load(std::memory_order_relaxed)) {
      try {
        stacks.push_back({base, sctx.size});
        return;
      } catch (...) {
      }
    }
  }
  unmap_stack(base, sctx.size);
}

}  // namespace gateway
