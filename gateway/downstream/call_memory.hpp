#pragma once
// Memory for calls, kept per I/O thread: a call is allocated and freed for every downstream request, and
// a freed one serves the next without malloc. At most `cap` blocks wait; the rest go back to malloc, and
// the thread's exit returns them all.
//
// Kept only while a benchmark shows it pays: a class uses it by deriving from call_memory_allocated, so
// dropping that base (and this file) gives the class plain new/delete again.

#include <cstddef>
#include <new>
#include <utility>

namespace gateway {

class call_memory {
 public:
  static constexpr std::size_t cap = 1024;

  static void* take(std::size_t size) {
    auto& s = state;
    if (s.head != nullptr && size == s.block_size) {
      auto* block = s.head;
      s.head = block->next;
      --s.count;
      return block;
    }
    return ::operator new(size);
  }
  static void give(void* p, std::size_t size) {
    auto& s = state;
    if (s.closed || s.count == cap || (s.block_size != 0 && size != s.block_size) || size < sizeof(block)) {
      ::operator delete(p);
      return;
    }
    if (s.block_size == 0) {
      s.block_size = size;
      static thread_local releaser at_exit;  // constructed with the first block kept
    }
    s.head = new (p) block{s.head};
    ++s.count;
  }

 private:
  struct block {
    block* next;
  };
  struct list {  // trivially destructible: usable until the thread ends
    block* head = nullptr;
    std::size_t count = 0;
    std::size_t block_size = 0;
    bool closed = false;
  };
  struct releaser {
    ~releaser() {
      auto& s = state;
      s.closed = true;
      while (s.head != nullptr) ::operator delete(std::exchange(s.head, s.head->next));
      s.count = 0;
    }
  };
  static thread_local list state;
};

inline thread_local call_memory::list call_memory::state;

// The class-specific allocation functions a call inherits (the one place call_memory is wired in).
struct call_memory_allocated {
  static void* operator new(std::size_t size) { return call_memory::take(size); }
  static void operator delete(void* p, std::size_t size) { call_memory::give(p, size); }
};

}  // namespace gateway
