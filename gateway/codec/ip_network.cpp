#include "gateway/codec/ip_network.hpp"

#include <boost/asio/ip/address.hpp>

#include <charconv>

namespace gateway {

namespace {

// The address's bytes (an IPv4-mapped IPv6 address as IPv4); false when `text` is no address.
bool address_bytes(std::string_view text, std::array<unsigned char, 16>& out, bool& v6) {
  boost::system::error_code ec;
  auto a = boost::asio::ip::make_address(std::string(text), ec);
  if (ec) return false;
  if (a.is_v6() && a.to_v6().is_v4_mapped())
    a = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6());
  out = {};
  v6 = a.is_v6();
  if (v6) {
    out = a.to_v6().to_bytes();
  } else {
    const auto b = a.to_v4().to_bytes();
    std::copy(b.begin(), b.end(), out.begin());
  }
  return true;
}

}  // namespace

std::optional<ip_network> ip_network::parse(std::string_view text, std::string& error) {
  ip_network n;
  n.text_ = std::string(text);
  const auto slash = text.find('/');
  if (!address_bytes(text.substr(0, slash), n.bytes_, n.v6_)) {
    error = "'" + std::string(text) + "' is not an IP address or network (like 10.0.0.0/8)";
    return std::nullopt;
  }
  const unsigned bits = n.v6_ ? 128 : 32;
  n.prefix_ = bits;
  if (slash != std::string_view::npos) {
    const auto digits = text.substr(slash + 1);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n.prefix_);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || n.prefix_ > bits) {
      error = "'" + std::string(text) + "' has a bad prefix length (0-" + std::to_string(bits) + ")";
      return std::nullopt;
    }
  }
  return n;
}

bool ip_network::contains(std::string_view address) const {
  std::array<unsigned char, 16> bytes{};
  bool v6 = false;
  if (!address_bytes(address, bytes, v6) || v6 != v6_) return false;
  unsigned left = prefix_;
  for (std::size_t i = 0; left > 0; ++i) {
    const unsigned take = left >= 8 ? 8 : left;
    const auto mask = static_cast<unsigned char>(0xFF << (8 - take));
    if ((bytes[i] & mask) != (bytes_[i] & mask)) return false;
    left -= take;
  }
  return true;
}

std::string_view forwarded_client(std::string_view forwarded_for, std::span<const ip_network> trusted) {
  std::string_view believed;
  auto rest = forwarded_for;
  while (!rest.empty()) {
    const auto comma = rest.rfind(',');
    auto entry = comma == std::string_view::npos ? rest : rest.substr(comma + 1);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(0, comma);
    while (!entry.empty() && (entry.front() == ' ' || entry.front() == '\t')) entry.remove_prefix(1);
    while (!entry.empty() && (entry.back() == ' ' || entry.back() == '\t')) entry.remove_suffix(1);
    std::array<unsigned char, 16> bytes{};
    bool v6 = false;
    if (entry.empty() || entry.size() > 64 || !address_bytes(entry, bytes, v6)) return believed;
    believed = entry;
    bool ours = false;
    for (const auto& n : trusted) ours = ours || n.contains(entry);
    if (!ours) return entry;
  }
  return believed;
}

}  // namespace gateway
