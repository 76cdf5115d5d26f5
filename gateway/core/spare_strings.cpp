#include "gateway/core/spare_strings.hpp"

#include <vector>

namespace gateway::spare_strings {
namespace {

thread_local std::vector<std::string> kept;

}  // namespace

std::string take(std::size_t capacity) {
  std::string s;
  if (!kept.empty()) {
    s = std::move(kept.back());
    kept.pop_back();
    s.clear();
  }
  s.reserve(capacity);
  return s;
}

void give(std::string&& s) {
  // A buffer in the string itself (short string) is no allocation to save.
  if (s.capacity() <= std::string().capacity() || s.capacity() > max_bytes || kept.size() >= max_kept) return;
  if (kept.capacity() == 0) kept.reserve(max_kept);
  kept.push_back(std::move(s));
}

}  // namespace gateway::spare_strings
