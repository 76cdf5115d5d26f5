#include "gateway/runtime/io_thread.hpp"

#include <cstdio>
#include <cstdlib>

namespace gateway {
namespace {
thread_local bool io_thread = false;
}

void mark_io_thread() {
  io_thread = true;
}

bool on_io_thread() {
  return io_thread;
}

void require_off_io_thread(const char* what) {
  if (!io_thread) return;
  std::fprintf(stderr, "fatal: %s called on an I/O thread\n", what);
  std::abort();
}

}  // namespace gateway
