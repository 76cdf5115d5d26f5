#include "loadtest/mock/behaviour.hpp"

#include <array>
#include <utility>

namespace mock {
namespace {

constexpr std::array<std::pair<std::string_view, mode>, 19> modes = {{
    {"ok", mode::ok},
    {"hang", mode::hang},
    {"fail", mode::fail},
    {"reset", mode::reset},
    {"garbage", mode::garbage},
    {"notobject", mode::notobject},
    {"big", mode::big},
    {"drip", mode::drip},
    {"slowheaders", mode::slowheaders},
    {"chunked", mode::chunked},
    {"interim", mode::interim},
    {"gzipchunked", mode::gzipchunked},
    {"unavailable", mode::unavailable},
    {"flaky", mode::flaky},
    {"compressed", mode::compressed},
    {"zipbomb", mode::zipbomb},
    {"badgzip", mode::badgzip},
    {"brotli", mode::brotli},
    {"items", mode::items},
}};

}  // namespace

std::optional<mode> parse_mode(std::string_view text) {
  for (const auto& [name, value] : modes) {
    if (name == text) return value;
  }
  return std::nullopt;
}

std::string_view mode_names() {
  return "ok|hang|fail|reset|garbage|notobject|big|drip|slowheaders|chunked|interim|gzipchunked|unavailable|"
         "flaky|compressed|zipbomb|badgzip|brotli|items";
}

bool is_valid_path_name(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '/' || c == '.' || c == '%';
    if (!ok) return false;
  }
  return true;
}

std::string_view setting_prefix(std::string_view name) {
  return name.ends_with("/*") ? name.substr(0, name.size() - 1) : std::string_view{};
}

bool is_valid_setting_name(std::string_view name) {
  const auto prefix = setting_prefix(name);
  return is_valid_path_name(prefix.empty() ? name : prefix);
}

}  // namespace mock
