#pragma once
// What the libFuzzer targets share: a broken invariant aborts with its text (libFuzzer then keeps the
// input as a crash), an input is read as a few leading control bytes followed by the payload, and a
// reference UTF-8 check.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#define FUZZ_STRINGIFY_(x) #x
#define FUZZ_STRINGIFY(x) FUZZ_STRINGIFY_(x)
// Aborts when `cond` is false, naming the condition and where it is checked.
#define FUZZ_CHECK(cond) \
  ((cond) ? void() : ::fuzz::fail(__FILE__ ":" FUZZ_STRINGIFY(__LINE__) ": invariant broken: " #cond))

namespace fuzz {

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "%s\n", what);
  std::fflush(stderr);
  std::abort();
}

// The input, consumed from the front: control bytes first, then the payload.
class input {
 public:
  input(const std::uint8_t* data, std::size_t size) : rest_(reinterpret_cast<const char*>(data), size) {}

  // The next byte, or 0 once the input is used up.
  std::uint8_t byte() {
    if (rest_.empty()) return 0;
    const auto b = static_cast<std::uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return b;
  }
  // The next `n` bytes (fewer at the end).
  std::string_view take(std::size_t n) {
    const auto part = rest_.substr(0, n);
    rest_.remove_prefix(part.size());
    return part;
  }
  std::string_view rest() const { return rest_; }
  bool empty() const { return rest_.empty(); }

 private:
  std::string_view rest_;
};

// Sizes of the pieces a byte stream arrives in, from one control byte: the low three bits pick the
// largest piece (0: the whole stream at once), the rest seed the sequence. Deterministic, so that a
// crash reproduces.
class piece_sizes {
 public:
  explicit piece_sizes(std::uint8_t control) : state_(0x9E3779B9u ^ (control >> 3)) {
    static constexpr std::size_t largest[] = {0, 1, 2, 3, 7, 16, 100, 1000};
    max_ = largest[control & 7];
  }

  // The size of the next piece, at least 1; 0 means "everything that is left".
  std::size_t next() {
    if (max_ == 0) return 0;
    state_ ^= state_ << 13;
    state_ ^= state_ >> 17;
    state_ ^= state_ << 5;
    return 1 + state_ % max_;
  }

 private:
  std::uint32_t state_;
  std::size_t max_ = 0;
};

// RFC 3629 UTF-8: shortest forms, no surrogates, nothing above U+10FFFF.
inline bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;  // the range of the second byte
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      len = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      len = 3;
      lo = b0 == 0xE0 ? 0xA0 : lo;
      hi = b0 == 0xED ? 0x9F : hi;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      len = 4;
      lo = b0 == 0xF0 ? 0x90 : lo;
      hi = b0 == 0xF4 ? 0x8F : hi;
    } else {
      return false;
    }
    if (s.size() - i < len) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (k == 1 ? (b < lo || b > hi) : (b & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

}  // namespace fuzz
