#include "gateway/limit/redis_settings.hpp"

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include <charconv>
#include <limits>

namespace gateway {

namespace {

// A whole decimal number in [min, max], digits only.
template <typename T>
std::optional<T> whole_number(std::string_view text, T min, T max) {
  if (text.empty() || text.size() > 10) return std::nullopt;
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.front() == '-' || text.front() == '+')
    return std::nullopt;
  if (value < static_cast<long long>(min) || value > static_cast<long long>(max)) return std::nullopt;
  return static_cast<T>(value);
}

bool equals_lower(std::string_view text, std::string_view lower) {
  if (text.size() != lower.size()) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i] >= 'A' && text[i] <= 'Z' ? static_cast<char>(text[i] - 'A' + 'a') : text[i];
    if (c != lower[i]) return false;
  }
  return true;
}

}  // namespace

std::optional<redis_settings> parse_redis_url(std::string_view url, std::string& error) {
  const auto parsed = boost::urls::parse_uri(url);
  if (!parsed) {
    error = "not a URL of the form redis://[user[:password]@]host[:port][/db]";
    return std::nullopt;
  }
  const boost::urls::url_view& u = *parsed;
  redis_settings s;
  if (equals_lower(u.scheme(), "rediss")) {
    s.tls = true;
  } else if (!equals_lower(u.scheme(), "redis")) {
    error = "the scheme must be redis:// or rediss://, not " + std::string(u.scheme()) + "://";
    return std::nullopt;
  }
  if (!u.has_authority() || u.encoded_host().empty()) {
    error = "the URL names no host";
    return std::nullopt;
  }
  // host_address(): decoded, an IPv6 address without its brackets.
  s.host = u.host_address();
  if (u.has_port()) {
    const auto port = whole_number<std::uint16_t>(u.port(), 1, 65535);
    if (!port) {
      error = "the port must be a number 1..65535, not '" + std::string(u.port()) + "'";
      return std::nullopt;
    }
    s.port = *port;
  }
  if (u.has_userinfo()) {
    s.username = u.user();
    if (u.has_password()) s.password = u.password();
    if (!u.has_password() && !s.username.empty()) {
      error = "a user needs a password (redis://user:password@host, or redis://:password@host)";
      return std::nullopt;
    }
  }
  const std::string_view path = u.encoded_path();
  if (!path.empty() && path != "/") {
    const auto db = whole_number<int>(path.substr(1), 0, std::numeric_limits<int>::max());
    if (path.front() != '/' || !db) {
      error = "the path must be /DB, a database number 0..2147483647, not '" + std::string(path) + "'";
      return std::nullopt;
    }
    s.database = *db;
  }
  if (u.has_query() || u.has_fragment()) {
    error = "the URL must have no query and no fragment";
    return std::nullopt;
  }
  return s;
}

}  // namespace gateway
