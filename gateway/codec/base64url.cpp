#include "gateway/codec/base64url.hpp"

#include <array>
#include <cstdint>

namespace gateway {
namespace {

constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr std::uint8_t invalid = 0xff;

// The 6-bit value of each byte, `invalid` for a byte outside the alphabet.
constexpr auto values = [] {
  std::array<std::uint8_t, 256> table{};
  table.fill(invalid);
  for (std::uint8_t i = 0; i < 64; ++i) table[static_cast<unsigned char>(alphabet[i])] = i;
  return table;
}();

}  // namespace

bool base64url_decode(std::string_view text, std::string& out) {
  out.clear();
  if (text.size() % 4 == 1) return false;
  out.reserve(text.size() / 4 * 3 + 2);
  std::uint32_t bits = 0;  // the last `count` 6-bit values, not yet written
  unsigned count = 0;
  for (const char c : text) {
    const auto v = values[static_cast<unsigned char>(c)];
    if (v == invalid) return false;
    bits = bits << 6 | v;
    if (++count == 4) {
      out += static_cast<char>(bits >> 16 & 0xff);
      out += static_cast<char>(bits >> 8 & 0xff);
      out += static_cast<char>(bits & 0xff);
      bits = 0;
      count = 0;
    }
  }
  // A tail of 2 characters holds one byte and 4 unused bits; of 3, two bytes and 2 unused bits.
  if (count == 2) {
    if (bits & 0xf) return false;
    out += static_cast<char>(bits >> 4 & 0xff);
  } else if (count == 3) {
    if (bits & 0x3) return false;
    out += static_cast<char>(bits >> 10 & 0xff);
    out += static_cast<char>(bits >> 2 & 0xff);
  }
  return true;
}

void base64url_append(std::string& out, const void* data, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  out.reserve(out.size() + (size * 4 + 2) / 3);
  std::size_t i = 0;
  for (; i + 3 <= size; i += 3) {
    const std::uint32_t v = std::uint32_t{p[i]} << 16 | std::uint32_t{p[i + 1]} << 8 | p[i + 2];
    out += alphabet[v >> 18 & 63];
    out += alphabet[v >> 12 & 63];
    out += alphabet[v >> 6 & 63];
    out += alphabet[v & 63];
  }
  if (size - i == 1) {
    const std::uint32_t v = std::uint32_t{p[i]} << 16;
    out += alphabet[v >> 18 & 63];
    out += alphabet[v >> 12 & 63];
  } else if (size - i == 2) {
    const std::uint32_t v = std::uint32_t{p[i]} << 16 | std::uint32_t{p[i + 1]} << 8;
    out += alphabet[v >> 18 & 63];
    out += alphabet[v >> 12 & 63];
    out += alphabet[v >> 6 & 63];
  }
}

}  // namespace gateway
