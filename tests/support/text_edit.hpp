#pragma once
// Small edits and look-ups on config text for tests that build a config and then break it on purpose.
// replace_once fails the running test (Catch2 REQUIRE) when the text to replace is missing.

#include <catch2/catch.hpp>

#include <sstream>
#include <string>

namespace test_support {

// 1-based number of the first line of `text` containing `needle`, 0 if none.
inline int line_of(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(needle) != std::string::npos) return n;
  return 0;
}

// Replaces the first occurrence of `from` with `to`.
inline std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace test_support
