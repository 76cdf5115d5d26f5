#pragma once
// A set of API keys, as a keys file lists them: one key per line, "NAME SHA256-HEX" (the key's SHA-256 in
// 64 hex digits; the key itself is never stored), blank lines and lines starting with '#' ignored.
// Immutable once built; shared between threads.
//
// find() hashes the presented key and looks its digest up: what the lookup's time depends on is the
// digest of the attacker's own input, which tells nothing about a stored key; the match itself is
// confirmed with CRYPTO_memcmp, in constant time.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gateway {

class api_key_set {
 public:
  using digest = std::array<unsigned char, 32>;

  // Null with `error` ("line 3: ...") when a line is not "NAME HEX", a name repeats, or a digest repeats.
  static std::shared_ptr<const api_key_set> parse(std::string_view text, std::string& error);

  // The name of the key `presented`, or null when it is none of them.
  const std::string* find(std::string_view presented) const;
  std::size_t size() const { return entries_.size(); }

  static digest sha256(std::string_view text);

 private:
  struct entry {
    digest hash;
    std::string name;
  };
  std::vector<entry> entries_;
  std::unordered_multimap<std::uint64_t, std::size_t> by_prefix_;  // first 8 bytes of the digest -> entry
};

}  // namespace gateway
