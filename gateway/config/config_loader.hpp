#pragma once
// Loads and validates the YAML configuration. Every problem is collected (not only the first) with the
// 1-based line and column of the offending node; a config is returned only when there are none.

#include "gateway/config/config.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gateway {

struct config_error {
  int line = 0;  // 1-based; 0 when the file could not be read at all
  int column = 0;
  std::string message;
};

struct config_load_result {
  std::optional<gateway_config> config;
  std::vector<config_error> errors;
  // Accepted but to be changed by the operator (a retired key): shown by --check and logged at a start
  // or reload; never a reason to refuse the configuration.
  std::vector<config_error> warnings;
};

struct load_options {
  // Nothing on this machine's file system is read beyond the configuration itself: TLS files (and the
  // system's trust store) are not loaded into contexts, so the result only says whether the text is valid
  // (`gateway --check --offline`, for a configuration meant for another machine, a pod say); it cannot run.
  bool offline = false;
};

config_load_result load_config_text(std::string_view yaml, const std::string& source_name,
                                    const load_options& options = {});
config_load_result load_config_file(const std::string& path, const load_options& options = {});
// The file's text (at most 16 MiB), or nullopt with why not in `error` (line 0).
std::optional<std::string> read_config_text(const std::string& path, config_error& error);
// A version that names a configuration's text: the first 16 hex digits of its SHA-256.
std::string config_version(std::string_view text);

// "FILE:LINE:COL: message"; format_config_warning: "FILE:LINE:COL: warning: message"
std::string format_config_error(const std::string& file, const config_error& error);
std::string format_config_warning(const std::string& file, const config_error& warning);

}  // namespace gateway
