#include "gateway/downstream/freshness.hpp"

#include "gateway/codec/http_text.hpp"
#include "gateway/codec/owned_fields.hpp"

#include <boost/beast/core/string.hpp>

#include <algorithm>
#include <charconv>

namespace gateway {

std::optional<std::uint32_t> freshness_seconds(std::string_view cache_control) {
  constexpr std::uint32_t most = 24 * 3600;
  std::optional<std::uint32_t> max_age;
  std::optional<std::uint32_t> s_maxage;
  std::string_view rest = cache_control;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const auto d = trim_ows(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const auto eq = d.find('=');
    const auto name = d.substr(0, eq);
    if (boost::beast::iequals(name, "no-store") || boost::beast::iequals(name, "no-cache") ||
        boost::beast::iequals(name, "private")) {
      return 0;
    }
    if (eq == std::string_view::npos) continue;
    auto value = d.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);  // the quoted-string form
    }
    std::uint64_t seconds = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (ec == std::errc::result_out_of_range) {
      seconds = most;
    } else if (ec != std::errc() || end != value.data() + value.size()) {
      continue;  // not a number: ignored, as RFC 9111 asks of a malformed directive
    }
    const auto bounded = static_cast<std::uint32_t>(std::min<std::uint64_t>(seconds, most));
    if (boost::beast::iequals(name, "s-maxage")) s_maxage = bounded;
    if (boost::beast::iequals(name, "max-age")) max_age = bounded;
  }
  return s_maxage ? s_maxage : max_age;
}

bool varies_beyond_key(std::string_view vary) {
  while (!vary.empty()) {
    const auto comma = vary.find(',');
    const auto name = trim_ows(vary.substr(0, comma));
    vary = comma == std::string_view::npos ? std::string_view() : vary.substr(comma + 1);
    if (name == "*" || listed_ci(name, per_request_fields)) return true;
  }
  return false;
}

}  // namespace gateway
