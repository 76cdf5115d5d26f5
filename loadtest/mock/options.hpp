#pragma once
// The mock's command line and YAML profile, parsed into plain settings. No I/O except reading the
// profile file named by --profile and the body files named by --body.

#include "loadtest/mock/behaviour.hpp"
#include "loadtest/mock/latency.hpp"
#include "loadtest/mock/tls_options.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mock {

struct listen_address {
  std::string host = "127.0.0.1";
  unsigned short port = 9001;
  friend bool operator==(const listen_address&, const listen_address&) = default;
};

struct path_setting {
  std::string name;
  mode how = mode::ok;
  std::optional<latency> delay;  // nullopt: the default delay
};

// The body of a path's ok answers, sent verbatim.
struct path_body {
  std::string name;
  std::string json;
};

struct mock_options {
  static constexpr std::size_t max_listeners = 64;

  std::vector<listen_address> listen;  // one endpoint each, in order; never empty after parsing
  unsigned threads = 1;
  unsigned backlog = 0;  // each listener's listen backlog; 0: the system's maximum (somaxconn)
  latency default_delay;
  std::uint64_t seed = 1;                   // seeds the delay generators of the paths with a tail
  std::string cache_control;                // a Cache-Control field on every answer; empty: none
  std::vector<std::string> record_headers;  // lower-case names whose last values /__stats shows per path
  std::vector<path_setting> paths;          // applied in order, a later entry for a name wins
  std::vector<path_body> bodies;            // applied after `paths`, a later entry for a name wins
  bool help = false;
  tls_options tls;  // HTTPS listeners, after `listen`
};

// Parses the arguments after the program name. A profile (--profile) is applied first and the other
// options override it, whatever their order. Returns nullopt and sets `error` for an unknown or bad
// argument, a bad profile or an unreadable or non-JSON body file.
std::optional<mock_options> parse_command_line(const std::vector<std::string_view>& args, std::string& error);

// Applies a profile such as {default_delay: 150ms, paths: {coupon: {mode: hang, delay: 110ms}}}.
// Unknown keys are errors. Returns false and sets `error` when the text is not a valid profile.
bool apply_profile(const std::string& yaml, mock_options& options, std::string& error);

// Parses "NAME=MODE[:LATENCY]", e.g. "coupon=hang", "inventory=ok:120ms" or "coupon=ok:150ms,p98=700ms".
// Returns nullopt and sets `error` (the reason) when the text is bad.
std::optional<path_setting> parse_path_setting(std::string_view text, std::string& error);

// Parses "HOST:PORT" or "[IPV6]:PORT"; "localhost" stands for 127.0.0.1.
std::optional<listen_address> parse_listen_address(std::string_view text);

std::string usage();

}  // namespace mock
