// Loads a configuration: reads the file (at most 16 MiB), parses the YAML (a syntax error explained by
// yaml_syntax_errors.hpp), runs the section readers
// (config_sections.hpp) in order and the checks across sections, and sorts the errors into file order.

#include "gateway/config/config_loader.hpp"

#include "gateway/config/config_sections.hpp"
#include "gateway/config/yaml_reader.hpp"
#include "gateway/config/yaml_syntax_errors.hpp"

// SHA256_Init/Update/Final: deprecated since OpenSSL 3.0, but they hash in place, without loading a
// provider. EVP_Digest() here made every gateway without TLS initialise OpenSSL's default provider at start
// for this one digest: 2.1 MB of RSS (libcrypto's resident pages 3,412 against 1,448 kB idle).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace gateway {

namespace {

gateway_config read_config(const YAML::Node& root, std::vector<config_error>& errors,
                           std::vector<config_error>& warnings, bool offline) {
  gateway_config cfg;
  yaml_reader::secret_collector secrets(cfg.secret_values);
  config_parse_state state{errors, warnings, {}, {}, {}, offline, {}};
  yaml_reader top(root, errors, "top level");
  // Keys that belong to a section, written at the top level.
  top.advise("deadline", "deadline is set per route (routes[].deadline)");
  top.advise("listen", "listen is set in server (server.listen)");
  top.advise("threads", "threads is set in server (server.threads)");
  if (auto n = top.section("server")) read_server(state, *n, cfg.server);
  if (auto n = top.section("limits")) read_limits(state, *n, cfg.limits);
  if (auto n = top.section("log")) read_log(state, *n, cfg.log);
  if (auto n = top.section("admin")) read_admin(state, *n, cfg.admin);
  if (auto n = top.section("shutdown")) read_shutdown(state, *n, cfg.shutdown);
  if (auto n = top.section("tracing")) read_tracing(state, *n, cfg.tracing);
  if (auto n = top.section("downstreams")) read_downstreams(state, *n, cfg);
  if (auto n = top.section("redis")) read_redis(state, *n, cfg.redis);
  if (auto n = top.section("routes", yaml_reader::kind::sequence)) read_routes(state, *n, cfg);
  top.finish();
  check_across_sections(state, cfg);
  check_edge(state, cfg);
  if (cfg.routes.empty() && errors.empty()) errors.push_back({1, 1, "no routes configured"});
  return cfg;
}

}  // namespace

config_load_result load_config_text(std::string_view yaml, const std::string& source_name,
                                    const load_options& options) {
  config_load_result result;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    result.errors.push_back(
        {e.mark.line + 1, e.mark.column + 1, explain_yaml_error(yaml, e.msg, e.mark.line, e.mark.column)});
    return result;
  }
  if (auto quote = quote_open_at_end(yaml)) {
    result.errors.push_back(std::move(*quote));
    return result;
  }
  if (!root.IsMap()) {
    result.errors.push_back({1, 1, "the configuration must be a YAML mapping"});
    return result;
  }
  auto cfg = read_config(root, result.errors, result.warnings, options.offline);
  cfg.source = source_name;
  // In file order: a typo is then reported before the errors it causes further down.
  std::stable_sort(result.errors.begin(), result.errors.end(),
                   [](const config_error& a, const config_error& b) {
                     return std::pair(a.line, a.column) < std::pair(b.line, b.column);
                   });
  if (result.errors.empty()) result.config = std::move(cfg);
  return result;
}

std::optional<std::string> read_config_text(const std::string& path, config_error& error) {
  constexpr std::size_t max_bytes = 16 * 1024 * 1024;
  const auto failed = [&](const char* what, int err) {
    error = {0, 0, std::string(what) + ": " + std::strerror(err)};
    return std::nullopt;
  };
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) return failed("cannot open file", errno);
  std::string text;
  std::array<char, 64 * 1024> buffer;
  while (text.size() <= max_bytes) {
    const auto n = std::fread(buffer.data(), 1, buffer.size(), file.get());
    if (n < buffer.size() && std::ferror(file.get())) return failed("cannot read file", errno);  // EISDIR
    text.append(buffer.data(), n);
    if (n < buffer.size()) break;
  }
  if (text.size() > max_bytes) {
    error = {0, 0, "file larger than 16 MiB"};
    return std::nullopt;
  }
  return text;
}

std::string config_version(std::string_view text) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256_CTX ctx;
  SHA256_Init(&ctx);
  SHA256_Update(&ctx, text.data(), text.size());
  SHA256_Final(digest.data(), &ctx);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < 8; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

config_load_result load_config_file(const std::string& path, const load_options& options) {
  config_error error;
  const auto text = read_config_text(path, error);
  if (!text) return {std::nullopt, {error}, {}};
  return load_config_text(*text, path, options);
}

std::string format_config_error(const std::string& file, const config_error& error) {
  if (error.line == 0) return file + ": " + error.message;
  return file + ":" + std::to_string(error.line) + ":" + std::to_string(error.column) + ": " + error.message;
}

std::string format_config_warning(const std::string& file, const config_error& warning) {
  return format_config_error(file, {warning.line, warning.column, "warning: " + warning.message});
}

}  // namespace gateway
