#include "loadtest/mock/options.hpp"

#include "loadtest/mock/body_template.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <limits>
#include <sstream>

namespace mock {
namespace {

constexpr std::size_t max_body_size = 16 * 1024 * 1024;

template <class Int>
std::optional<Int> parse_number(std::string_view text, Int min, Int max) {
  Int value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < min || value > max)
    return std::nullopt;
  return value;
}

bool read_file(const std::string& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream content;
  content << in.rdbuf();
  text = content.str();
  return true;
}

// "NAME=@FILE": the file must hold JSON, maybe a template (body_template.hpp).
std::optional<path_body> parse_body_option(std::string_view text, std::string& error) {
  const auto eq = text.find('=');
  const std::string_view name = text.substr(0, eq);
  if (eq == std::string_view::npos || !is_valid_setting_name(name) || text.substr(eq + 1, 1) != "@") {
    error = "expected NAME=@FILE";
    return std::nullopt;
  }
  const std::string file(text.substr(eq + 2));
  path_body body{std::string(name), {}};
  std::string why;
  if (!read_file(file, body.json)) {
    error = "cannot read '" + file + "'";
  } else if (body.json.size() > max_body_size) {
    error = "'" + file + "' is larger than 16 MiB";
  } else if (!body_template::parse(body.json, why)) {
    error = "'" + file + "' " + why;
  } else {
    return body;
  }
  return std::nullopt;
}

bool apply_path_node(const std::string& name, const YAML::Node& node, mock_options& options,
                     std::string& error) {
  if (!is_valid_setting_name(name)) {
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
      std::string why;
      setting.delay = parse_latency(value, why);
      if (!setting.delay) {
        error = "paths." + name + ".delay: " + why;
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

std::optional<listen_address> parse_listen_address(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  std::string_view host = text.substr(0, colon);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return std::nullopt;
    host = host.substr(1, host.size() - 2);
  }
  const auto port = parse_number<unsigned>(text.substr(colon + 1), 0, 65535);
  if (!port) return std::nullopt;
  return listen_address{host == "localhost" ? "127.0.0.1" : std::string(host),
                        static_cast<unsigned short>(*port)};
}

std::optional<path_setting> parse_path_setting(std::string_view text, std::string& error) {
  const auto eq = text.find('=');
  path_setting setting;
  setting.name = std::string(text.substr(0, eq));
  if (eq == std::string_view::npos || !is_valid_setting_name(setting.name)) {
    error = "expected NAME=MODE[:DELAY] with NAME a path name of [A-Za-z0-9_-./%] or a prefix PATH/*";
    return std::nullopt;
  }
  std::string_view rest = text.substr(eq + 1);
  const auto colon = rest.find(':');
  if (colon != std::string_view::npos) {
    setting.delay = parse_latency(rest.substr(colon + 1), error);
    if (!setting.delay) return std::nullopt;
    rest = rest.substr(0, colon);
  }
  const auto how = parse_mode(rest);
  if (!how) {
    error = "unknown mode '" + std::string(rest) + "'";
    return std::nullopt;
  }
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
        const auto delay = parse_latency(item.second.as<std::string>(), error);
        if (!delay) {
          error = "default_delay: " + error;
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
  static constexpr std::string_view known[] = {
      "--listen",     "--threads",  "--backlog", "--delay",         "--path",
      "--body",       "--seed",     "--profile", "--cache-control", "--record-headers",
      "--tls-listen", "--tls-cert", "--tls-key", "--tls-client-ca"};
  mock_options options;
  std::optional<latency> delay;
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
    if (std::find(std::begin(known), std::end(known), arg) == std::end(known)) {
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
    std::string why;
    const auto bad = [&] {
      error = "bad value for " + std::string(arg) + ": '" + std::string(value) + "'";
      if (!why.empty()) error += " (" + why + ")";
      return std::nullopt;
    };
    if (arg == "--listen") {
      const auto address = parse_listen_address(value);
      if (!address) return bad();
      if (options.listen.size() == mock_options::max_listeners) {
        why = "at most " + std::to_string(mock_options::max_listeners) + " listeners";
        return bad();
      }
      options.listen.push_back(*address);
    } else if (arg == "--threads") {
      const auto threads = parse_number<unsigned>(value, 1, 256);
      if (!threads) return bad();
      options.threads = *threads;
    } else if (arg == "--backlog") {
      const auto backlog = parse_number<unsigned>(value, 1, 65535);
      if (!backlog) return bad();
      options.backlog = *backlog;
    } else if (arg == "--delay") {
      delay = parse_latency(value, why);
      if (!delay) return bad();
    } else if (arg == "--path") {
      auto setting = parse_path_setting(value, why);
      if (!setting) return bad();
      paths.push_back(std::move(*setting));
    } else if (arg == "--body") {
      auto body = parse_body_option(value, why);
      if (!body) return bad();
      options.bodies.push_back(std::move(*body));
    } else if (arg == "--cache-control") {
      if (value.find_first_of("\r\n") != std::string_view::npos) return bad();
      options.cache_control = std::string(value);
    } else if (arg == "--record-headers") {
      for (std::size_t at = 0; at <= value.size();) {
        const auto comma = std::min(value.find(',', at), value.size());
        std::string name(value.substr(at, comma - at));
        if (name.empty() || name.find_first_of(" \t\r\n:") != std::string::npos) return bad();
        for (auto& c : name) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
        options.record_headers.push_back(std::move(name));
        at = comma + 1;
      }
    } else if (arg == "--seed") {
      const auto seed = parse_number<std::uint64_t>(value, 0, std::numeric_limits<std::uint64_t>::max());
      if (!seed) return bad();
      options.seed = *seed;
    } else if (arg.starts_with("--tls-")) {
      if (!apply_tls_option(arg, value, options.tls, why)) return bad();
    } else {
      profile = std::string(value);
    }
  }
  if (auto problem = tls_options_problem(options.tls); !problem.empty()) {
    error = std::move(problem);
    return std::nullopt;
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
  if (options.listen.empty()) options.listen.emplace_back();
  if (delay) options.default_delay = *delay;
  for (auto& p : paths) options.paths.push_back(std::move(p));
  return options;
}

std::string usage() {
  return "usage: mock-downstream [--listen HOST:PORT]... [--threads N] [--backlog N] [--delay LATENCY] "
         "[--seed N]\n"
         "                       [--path NAME=MODE[:LATENCY]]... [--body NAME=@FILE]... [--profile FILE]\n"
         "                       [--help]\n"
         "  --listen   address to listen on (default 127.0.0.1:9001; port 0 picks a free port); repeatable:\n"
         "             each listener is one endpoint of the same service, printed in order as\n"
         "             'mock-downstream listening on HOST:PORT'\n"
         "  --threads  worker threads, 1-256 (default 1)\n"
         "  --backlog  each listener's listen backlog, 1-65535 (default: the system's maximum); e.g. 511,\n"
         "             nginx's, for a downstream whose accept queue a burst of connects overflows\n"
         "  --delay    delay before answering, for every path without its own (default 0ms)\n"
         "  --seed     seeds which requests land in a latency's tail (default 1): runs repeat\n"
         "  --cache-control VALUE  every answer carries Cache-Control: VALUE (e.g. max-age=60)\n"
         "  --record-headers A,B   /__stats shows per path the last values of these request headers\n"
         "                         (and @method, @body: the last request's method and body)\n"
         "  --path     behaviour of one path, repeatable; MODE is one of " +
         std::string(mode_names()) +
         "\n"
         "             (items: {\"source\":NAME,\"count\":N,\"items\":[{\"id\":\"NAME-0\",\"n\":0},...]},\n"
         "             N from the query's count=N, default 3, at most 10000; another count is a 400)\n"
         "  --body     the JSON in FILE is the body of the path's ok answers, sent verbatim unless a string\n"
         "             value holds a placeholder; repeatable (placeholders: see BODY below)\n"
         "  --profile  YAML file: {default_delay: 150ms, paths: {coupon: {mode: hang, delay: 110ms}}}\n"
         "             (applied first; the other options override it)\n"
         "LATENCY: DURATION[,pP=DURATION]...: '150ms,p98=700ms' is 150 ms for 98% of the requests and\n"
         "         700 ms for the slowest 2%; up to 4 tail terms, percentiles and delays increasing\n"
         "durations: <digits>us|ms|s|m\n"
         "NAME: a path name, the request's path without its leading '/' (GET /seller/17 is seller/17), or\n"
         "      a prefix PATH/* (seller/*): the settings of the paths under PATH/ without their own (the\n"
         "      longest prefix wins); in --path, --body, the profile's paths and /__control\n"
         "control and data requests (GET; /__control also POST):\n"
         "  /__stats   counters, in total and per endpoint (keyed by port); per requested path its requests\n"
         "             and cancelled (the client closed its connection before the answer was written)\n"
         "  /__reset   zeroes the counters and restarts the tails' generators\n"
         "  /__mode?path=NAME&mode=MODE[&delay=LATENCY]\n"
         "  /__control?path=NAME[&mode=MODE][&delay=LATENCY|&latency=LATENCY][&body=JSON][&port=P]\n"
         "             changes a path at run time, on every endpoint or (port=P) on one only; values\n"
         "             percent-encoded; an empty body goes back to the generated one\n"
         "  /NAME?sku=SKU[&...]  a downstream call; other query parameters are echoed in \"query\"\n"
         "BODY (--body, /__control's body): in string values, {path} is the path name, {seg.N} its N-th\n"
         "  '/'-separated segment from 0, {query.KEY} a query parameter (percent-decoded), {header.NAME} a\n"
         "  request header field; each JSON-escaped, empty when absent. A value that is exactly one of them\n"
         "  with '#', \"{#seg.1}\", is written as a bare number when it is one. E.g. for GET /seller/17:\n"
         "  {\"id\":\"{#seg.1}\",\"name\":\"seller {seg.1}\"} -> {\"id\":17,\"name\":\"seller 17\"}\n"
         "TLS (HTTPS endpoints beside the plain ones, which keep serving the control requests):\n"
         "  --tls-listen HOST:PORT  an HTTPS listener, repeatable; its endpoints follow the --listen ones "
         "and\n"
         "             print 'mock-downstream listening on HOST:PORT (tls)'\n"
         "  --tls-cert FILE, --tls-key FILE  the server's PEM certificate chain and key (both required)\n"
         "  --tls-client-ca FILE  require a client certificate signed by this CA (mutual TLS)\n"
         "  /__stats counts them: \"handshakes\":{\"tls\":N,\"resumed\":N} (resumed: a session resumed)\n";
}

}  // namespace mock
