#include "gateway/config/config_values.hpp"

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <optional>

namespace gateway {

std::optional<std::pair<std::string, std::string>> split_host_port(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return std::nullopt;
  std::string host(text.substr(0, colon));
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const auto digits = text.substr(colon + 1);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::pair(std::move(host), std::string(digits));
}

std::optional<unsigned> parse_status_code(std::string_view text, unsigned lowest, unsigned highest) {
  unsigned status = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), status);
  if (ec != std::errc() || end != text.data() + text.size() || status < lowest || status > highest)
    return std::nullopt;
  return status;
}

std::string parse_port(const std::string& digits, unsigned lowest, std::uint16_t& port) {
  const auto first = digits.find_first_not_of('0');
  const bool fits = first == std::string::npos || digits.size() - first <= 5;
  const unsigned long value = fits ? std::stoul(digits) : 0;
  if (!fits || value < lowest || value > 65535)
    return "port " + digits + " out of range " + std::to_string(lowest) + "-65535";
  port = static_cast<std::uint16_t>(value);
  return {};
}

std::string parse_listen(const std::string& text, const std::string& example, listen_address& out) {
  const auto parts = split_host_port(text);
  if (!parts) return "expected HOST:PORT, e.g. " + example;
  boost::system::error_code ec;
  boost::asio::ip::make_address(parts->first, ec);
  if (ec) return "'" + parts->first + "' is not an IP address";
  std::uint16_t port = 0;
  if (auto problem = parse_port(parts->second, 0, port); !problem.empty()) return problem;
  out = {parts->first, port};
  return {};
}

bool listeners_overlap(const listen_address& a, const listen_address& b) {
  if (a.port != b.port || a.port == 0) return false;
  // An IPv4-mapped IPv6 address (::ffff:a.b.c.d) binds the IPv4 address it maps.
  const auto bound = [](const std::string& host, boost::system::error_code& ec) {
    auto address = boost::asio::ip::make_address(host, ec);
    if (!ec && address.is_v6() && address.to_v6().is_v4_mapped())
      address = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6());
    return address;
  };
  boost::system::error_code ec_a;
  boost::system::error_code ec_b;
  const auto x = bound(a.host, ec_a);
  const auto y = bound(b.host, ec_b);
  if (ec_a || ec_b) return false;
  const auto covers = [](const boost::asio::ip::address& wildcard, const boost::asio::ip::address& other) {
    return wildcard.is_unspecified() && (wildcard.is_v6() || other.is_v4());
  };
  return x == y || covers(x, y) || covers(y, x);
}

std::string parse_downstream_url(downstream_settings& d) {
  constexpr std::string_view http_scheme = "http://";
  constexpr std::string_view https_scheme = "https://";
  std::string_view url = d.url;
  const bool tls = url.starts_with(https_scheme);
  if (!tls && !url.starts_with(http_scheme)) return "url must start with http:// or https://";
  d.tls.enabled = tls;  // known before the rest is checked: a tls section is judged against it
  url.remove_prefix(tls ? https_scheme.size() : http_scheme.size());
  const auto slash = url.find('/');
  const std::string_view authority = url.substr(0, slash);
  // Userinfo would never be sent (the gateway sends no Authorization of its own), yet would be shown
  // wherever the url is: /config, metric labels, logs. The text is not quoted back either.
  if (authority.find('@') != std::string_view::npos)
    return "url must not hold credentials (user:password@): send them in a header whose value comes from "
           "the environment, e.g. headers.set: {Authorization: 'Basic ${SHOP_CREDENTIALS}'} on the route or "
           "call";
  std::string base = slash == std::string_view::npos ? std::string() : std::string(url.substr(slash));
  while (!base.empty() && base.back() == '/') base.pop_back();
  for (char c : base) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == '?' || c == '#')
      return "url base path has a forbidden character";
  }
  std::string host(authority);
  std::uint16_t port = tls ? 443 : 80;
  if (authority.find(':') != std::string_view::npos) {
    auto parts = split_host_port(authority);
    if (!parts) return "url needs host[:port]";
    if (auto problem = parse_port(parts->second, 1, port); !problem.empty()) return problem;
    host = std::move(parts->first);
  }
  if (host.empty()) return "url needs host[:port]";
  d.host = std::move(host);
  d.port = port;
  d.base_path = std::move(base);
  return {};
}

bool credential_name(std::string_view name) {
  // Without copying: the access log asks it of every query parameter's name.
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  for (std::string_view part :
       {"auth", "key", "token", "secret", "cookie", "password", "passwd", "credential", "session"}) {
    for (std::size_t at = 0; at + part.size() <= name.size(); ++at) {
      std::size_t i = 0;
      while (i < part.size() && lower(name[at + i]) == part[i]) ++i;
      if (i == part.size()) return true;
    }
  }
  return false;
}

bool substitute_env(const std::string& text, std::string& out, bool& used, std::string& problem,
                    bool* secret) {
  out.clear();
  std::size_t i = 0;
  while (i < text.size()) {
    const auto start = text.find("${", i);
    if (start == std::string::npos) break;
    const auto end = text.find('}', start + 2);
    if (end == std::string::npos) {
      problem = "unterminated ${ in value";
      return false;
    }
    std::string name = text.substr(start + 2, end - start - 2);
    std::optional<std::string> fallback;  // ${NAME:-default}: when NAME is unset or empty
    if (const auto dash = name.find(":-"); dash != std::string::npos) {
      fallback = name.substr(dash + 2);
      name.resize(dash);
    }
    const bool valid = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
    if (!valid) {
      problem = "bad environment reference ${" + text.substr(start + 2, end - start - 2) + "}";
      return false;
    }
    const char* value = std::getenv(name.c_str());
    const bool unset = value == nullptr || (fallback && *value == '\0');
    if (unset && !fallback) {
      problem = "environment variable " + name + " is not set (write ${" + name + ":-default} for a default)";
      return false;
    }
    out.append(text, i, start - i);
    out += unset ? *fallback : std::string(value);
    used = true;
    if (secret != nullptr && credential_name(name)) *secret = true;
    i = end + 1;
  }
  out.append(text, i, std::string::npos);
  return true;
}

}  // namespace gateway
