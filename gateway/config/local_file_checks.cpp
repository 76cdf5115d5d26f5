#include "gateway/config/local_file_checks.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

namespace gateway {

namespace {

// Why `path` cannot be opened for reading as a file, or "".
std::string unreadable(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return "is a directory";
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) return std::strerror(errno);
  return {};
}

// "(from the working directory /srv)" for a relative path, where the reader may not expect it.
std::string relative_note(const std::string& path) {
  if (std::filesystem::path(path).is_absolute()) return {};
  std::error_code ec;
  const auto cwd = std::filesystem::current_path(ec);
  return ec ? std::string() : " (from the working directory " + cwd.string() + ")";
}

}  // namespace

std::vector<config_error> check_local_files(const gateway_config& cfg) {
  std::vector<config_error> errors;
  for (const auto& d : cfg.downstreams) {
    if (d.kind != downstream_kind::sql || d.sql.driver != sql_driver::sqlite) continue;
    // sqlite's own names for a database without a file.
    if (d.sql.database == ":memory:") continue;
    if (auto why = unreadable(d.sql.database); !why.empty()) {
      errors.push_back({d.sql.database_at.line, d.sql.database_at.column,
                        "downstream '" + d.name + "'.database: cannot open '" + d.sql.database + "'" +
                            relative_note(d.sql.database) + ": " + why});
    }
  }
  std::stable_sort(errors.begin(), errors.end(), [](const config_error& a, const config_error& b) {
    return std::pair(a.line, a.column) < std::pair(b.line, b.column);
  });
  return errors;
}

}  // namespace gateway
