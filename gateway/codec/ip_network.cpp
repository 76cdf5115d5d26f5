#include "gateway/codec/ip_network.hpp"

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <charconv>

namespace gateway {

std::optional<ip_address> ip_address::parse(std::string_view text) {
  boost::system::error_code ec;
  auto a = boost::asio::ip::make_address(std::string(text), ec);
  if (ec) return std::nullopt;
  if (a.is_v6() && a.to_v6().is_v4_mapped())
    a = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6());
  ip_address out;
  out.v6_ = a.is_v6();
  if (out.v6_) {
    out.bytes_ = a.to_v6().to_bytes();
  } else {
    const auto b = a.to_v4().to_bytes();
    std::copy(b.begin(), b.end(), out.bytes_.begin());
  }
  return out;
}

std::optional<ip_network> ip_network::parse(std::string_view text, std::string& error) {
  ip_network n;
  n.text_ = std::string(text);
  const auto slash = text.find('/');
  const auto address = ip_address::parse(text.substr(0, slash));
  if (!address) {
    error = "'" + std::string(text) + "' is not an IP address or network (like 10.0.0.0/8)";
    return std::nullopt;
  }
  n.address_ = *address;
  const unsigned bits = n.address_.v6_ ? 128 : 32;
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

bool ip_network::contains(const ip_address& address) const {
  if (address.v6_ != address_.v6_) return false;
  unsigned left = prefix_;
  for (std::size_t i = 0; left > 0; ++i) {
    const unsigned take = left >= 8 ? 8 : left;
    const auto mask = static_cast<unsigned char>(0xFF << (8 - take));
    if ((address.bytes_[i] & mask) != (address_.bytes_[i] & mask)) return false;
    left -= take;
  }
  return true;
}

bool ip_network::contains(std::string_view address) const {
  const auto parsed = ip_address::parse(address);
  return parsed && contains(*parsed);
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
    if (entry.empty() || entry.size() > 64) return believed;
    const auto address = ip_address::parse(entry);
    if (!address) return believed;
    believed = entry;
    bool ours = false;
    for (const auto& n : trusted) ours = ours || n.contains(*address);
    if (!ours) return entry;
  }
  return believed;
}

}  // namespace gateway
