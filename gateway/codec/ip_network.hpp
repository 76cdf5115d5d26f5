#pragma once
// An IP network in CIDR form ("10.0.0.0/8", "2001:db8::/32", or one address "192.0.2.7"), and whether an
// address is inside it. An IPv4-mapped IPv6 address ("::ffff:10.1.2.3") counts as its IPv4 address.
// An address tested against several networks (a peer against the trusted proxies) is parsed once, as an
// ip_address. Pure.

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gateway {

// An IP address as its bytes, parsed from text once (an IPv4-mapped IPv6 address as its IPv4 address).
class ip_address {
 public:
  // nullopt when `text` ("10.1.2.3", "::1") is not an address.
  static std::optional<ip_address> parse(std::string_view text);

 private:
  friend class ip_network;
  std::array<unsigned char, 16> bytes_{};  // IPv4 in the first 4
  bool v6_ = false;
};

class ip_network {
 public:
  // nullopt and `error` set when `text` is not an address with an optional /prefix of fitting length.
  static std::optional<ip_network> parse(std::string_view text, std::string& error);

  bool contains(const ip_address& address) const;
  // `address` as text ("10.1.2.3", "::1"), parsed on every call; false when it is not an address.
  bool contains(std::string_view address) const;
  const std::string& text() const { return text_; }

 private:
  ip_address address_;  // the network's first address
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
