#pragma once
// An IP network in CIDR form ("10.0.0.0/8", "2001:db8::/32", or one address "192.0.2.7"), and whether an
// address is inside it. An IPv4-mapped IPv6 address ("::ffff:10.1.2.3") counts as its IPv4 address.
// Pure.

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gateway {

class ip_network {
 public:
  // nullopt and `error` set when `text` is not an address with an optional /prefix of fitting length.
  static std::optional<ip_network> parse(std::string_view text, std::string& error);

  // `address` as text ("10.1.2.3", "::1"); false when it is not an address.
  bool contains(std::string_view address) const;
  const std::string& text() const { return text_; }

 private:
  std::array<unsigned char, 16> bytes_{};  // IPv4 in the first 4
  bool v6_ = false;
  unsigned prefix_ = 0;
  std::string text_;
};

// The client's address by an X-Forwarded-For value (fields joined with commas) that a trusted proxy
// passed on: its entries from the right, each proxy's view of who sent to it, skipping those in `trusted`
// (proxies of ours); the first one not trusted, or the leftmost when all are. An entry that is not an
// address ends the walk at the one to its right (nothing left of a bad entry is believed); empty when
// there is no usable entry.
std::string_view forwarded_client(std::string_view forwarded_for, std::span<const ip_network> trusted);

}  // namespace gateway
