#include "gateway/runtime/memory_budget.hpp"

#include <unistd.h>

#include <atomic>
#include <charconv>
#include <fstream>
#include <string>

namespace gateway::memory_budget {
namespace {

std::atomic<std::size_t> budget{0};
std::atomic<std::size_t> in_use{0};

// The first number in `path`, or 0 when the file is absent or says "max".
std::size_t read_limit(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text)) return 0;
  std::size_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) return 0;
  return value;
}

}  // namespace

void configure(std::size_t bytes) {
  budget.store(bytes, std::memory_order_relaxed);
}

std::size_t limit() {
  return budget.load(std::memory_order_relaxed);
}

std::size_t used() {
  return in_use.load(std::memory_order_relaxed);
}

bool exhausted() {
  const auto b = budget.load(std::memory_order_relaxed);
  return b != 0 && in_use.load(std::memory_order_relaxed) >= b;
}

bool try_charge(std::size_t n) {
  const auto b = budget.load(std::memory_order_relaxed);
  const auto before = in_use.fetch_add(n, std::memory_order_relaxed);
  if (b == 0 || before + n <= b) return true;
  in_use.fetch_sub(n, std::memory_order_relaxed);
  return false;
}

void force_charge(std::size_t n) {
  in_use.fetch_add(n, std::memory_order_relaxed);
}

void release(std::size_t n) {
  in_use.fetch_sub(n, std::memory_order_relaxed);
}

std::size_t derive_default() {
  // cgroup v2, then v1; a v1 "no limit" is a huge number, which the machine's size then caps.
  std::size_t cgroup = read_limit("/sys/fs/cgroup/memory.max");
  if (cgroup == 0) cgroup = read_limit("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  std::size_t machine =
      pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) : 0;
  std::size_t total = machine;
  if (cgroup != 0 && (machine == 0 || cgroup < machine)) total = cgroup;
  return total / 2;
}

}  // namespace gateway::memory_budget
