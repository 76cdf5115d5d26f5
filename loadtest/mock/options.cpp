#include "loadtest/mock/options.hpp"

#include "gateway/core/duration.hpp"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <fstream>
#include <sstream>

namespace mock {
namespace {

template <class Int>
std::optional<Int> parse_number(std::string_view text, Int min, Int max) {
  Int value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < min || value > max)
    return std::nullopt;
  return value;
}

// "HOST:PORT" or "[IPV6]:PORT"; "localhost" stands for 127.0.0.1.
bool parse_listen(std::string_view text, mock_options& options) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  std::string_view host = text.substr(0, colon);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return false;
    host = host.substr(1, host.size() - 2);
  }
  const auto port = parse_number<unsigned>(text.substr(colon + 1), 0, 65535);
  if (!port) return false;
  options.host = host == "localhost" ? "127.0.0.1" : std::string(host);
  options.port = static_cast<unsigned short>(*port);
  return true;
}

bool read_file(const std::string& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream content;
  content << in.rdbuf();
  text = content.str();
  return true;
}

bool apply_path_node(const std::string& name, const YAML::Node& node, mock_options& options,
                     std::string& error) {
  if (!is_valid_path_name(name)) {
    error = "bad path name '" + name + "'";
    return false;
  }
  if (!node.IsMap()) {
    error = "paths." + name + " must be a map with mode and/or delay";
    return false;
  }
  path_setting setting{name, mode::ok, std::nullopt};
  for (const auto& item : node) {
    const auto key = item.first.as<std::string>();
    const auto value = item.second.as<std::string>();
    if (key == "mode") {
      const auto how = parse_mode(value);
      if (!how) {
        error = "paths." + name + ".mode: unknown mode '" + value + "'";
        return false;
      }
      setting.how = *how;
    } else if (key == "delay") {
      setting.delay = gateway::parse_duration(value);
      if (!setting.delay) {
        error = "paths." + name + ".delay: bad duration '" + value + "'";
        return false;
      }
    } else {
      error = "paths." + name + ": unknown key '" + key + "'";
      return false;
    }
  }
  options.paths.push_back(std::move(setting));
  return true;
}

}  // namespace

std::optional<path_setting> parse_path_setting(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos) return std::nullopt;
  path_setting setting;
  setting.name = std::string(text.substr(0, eq));
  if (!is_valid_path_name(setting.name)) return std::nullopt;
  std::string_view rest = text.substr(eq + 1);
  const auto colon = rest.find(':');
  if (colon != std::string_view::npos) {
    setting.delay = gateway::parse_duration(rest.substr(colon + 1));
    if (!setting.delay) return std::nullopt;
    rest = rest.substr(0, colon);
  }
  const auto how = parse_mode(rest);
  if (!how) return std::nullopt;
  setting.how = *how;
  return setting;
}

bool apply_profile(const std::string& yaml, mock_options& options, std::string& error) {
  try {
    const YAML::Node root = YAML::Load(yaml);
    if (root.IsNull()) return true;
    if (!root.IsMap()) {
      error = "the profile must be a map";
      return false;
    }
    for (const auto& item : root) {
      const auto key = item.first.as<std::string>();
      if (key == "default_delay") {
        const auto value = item.second.as<std::string>();
        const auto delay = gateway::parse_duration(value);
        if (!delay) {
          error = "default_delay: bad duration '" + value + "'";
          return false;
        }
        options.default_delay = *delay;
      } else if (key == "paths") {
        if (item.second.IsNull()) continue;
        if (!item.second.IsMap()) {
          error = "paths must be a map";
          return false;
        }
        for (const auto& path : item.second) {
          if (!apply_path_node(path.first.as<std::string>(), path.second, options, error)) return false;
        }
      } else {
        error = "unknown key '" + key + "'";
        return false;
      }
    }
    return true;
  } catch (const YAML::Exception& e) {
    error = e.what();
    return false;
  }
}

std::optional<mock_options> parse_command_line(const std::vector<std::string_view>& args,
                                               std::string& error) {
  mock_options options;
  std::optional<microseconds> delay;
  std::vector<path_setting> paths;
  std::string profile;

  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    std::string_view value;
    bool has_value = false;
    if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      return options;
    }
    if (arg != "--listen" && arg != "--threads" && arg != "--delay" && arg != "--path" &&
        arg != "--profile") {
      error = "unknown argument '" + std::string(args[i]) + "'";
      return std::nullopt;
    }
    if (!has_value) {
      if (i + 1 >= args.size()) {
        error = std::string(arg) + " needs a value";
        return std::nullopt;
      }
      value = args[++i];
    }
    const auto bad = [&] {
      error = "bad value for " + std::string(arg) + ": '" + std::string(value) + "'";
      return std::nullopt;
    };
    if (arg == "--listen") {
      if (!parse_listen(value, options)) return bad();
    } else if (arg == "--threads") {
      const auto threads = parse_number<unsigned>(value, 1, 256);
      if (!threads) return bad();
      options.threads = *threads;
    } else if (arg == "--delay") {
      delay = gateway::parse_duration(value);
      if (!delay) return bad();
    } else if (arg == "--path") {
      auto setting = parse_path_setting(value);
      if (!setting) return bad();
      paths.push_back(std::move(*setting));
    } else {
      profile = std::string(value);
    }
  }

  if (!profile.empty()) {
    std::string text;
    if (!read_file(profile, text)) {
      error = "cannot read profile '" + profile + "'";
      return std::nullopt;
    }
    if (!apply_profile(text, options, error)) {
      error = "profile '" + profile + "': " + error;
      return std::nullopt;
    }
  }
  if (delay) options.default_delay = *delay;
  for (auto& p : paths) options.paths.push_back(std::move(p));
  return options;
}

std::string usage() {
  return "usage: mock-downstream [--listen HOST:PORT] [--threads N] [--delay DURATION]\n"
         "                       [--path NAME=MODE[:DELAY]]... [--profile FILE] [--help]\n"
         "  --listen   address to listen on (default 127.0.0.1:9001; port 0 picks a free port)\n"
         "  --threads  worker threads, 1-256 (default 1)\n"
         "  --delay    delay before answering, for every path without its own (default 0ms)\n"
         "  --path     behaviour of one path, repeatable; MODE is one of " +
         std::string(mode_names()) +
         "\n"
         "  --profile  YAML file: {default_delay: 150ms, paths: {coupon: {mode: hang, delay: 110ms}}}\n"
         "             (applied first; the other options override it)\n"
         "durations: <digits>us|ms|s|m\n";
}

}  // namespace mock
