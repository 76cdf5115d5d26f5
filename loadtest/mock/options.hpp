#pragma once
// The mock's command line and YAML profile, parsed into plain settings. No I/O except reading the
// profile file named by --profile.

#include "loadtest/mock/behaviour.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mock {

struct path_setting {
  std::string name;
  mode how = mode::ok;
  std::optional<microseconds> delay;  // nullopt: the default delay
};

struct mock_options {
  std::string host = "127.0.0.1";
  unsigned short port = 9001;
  unsigned threads = 1;
  microseconds default_delay{0};
  std::vector<path_setting> paths;  // applied in order, a later entry for a name wins
  bool help = false;
};

// Parses the arguments after the program name. A profile (--profile) is applied first and the other
// options override it, whatever their order. Returns nullopt and sets `error` for an unknown or bad
// argument or a bad profile.
std::optional<mock_options> parse_command_line(const std::vector<std::string_view>& args, std::string& error);

// Applies a profile such as {default_delay: 150ms, paths: {coupon: {mode: hang, delay: 110ms}}}.
// Unknown keys are errors. Returns false and sets `error` when the text is not a valid profile.
bool apply_profile(const std::string& yaml, mock_options& options, std::string& error);

// Parses "NAME=MODE[:DELAY]", e.g. "coupon=hang" or "inventory=ok:120ms".
std::optional<path_setting> parse_path_setting(std::string_view text);

std::string usage();

}  // namespace mock
