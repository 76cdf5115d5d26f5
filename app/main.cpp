// gateway: parse arguments, load the configuration, run the server until SIGTERM/SIGINT.

#include "gateway/config/config_loader.hpp"
#include "gateway/config/local_file_checks.hpp"
#include "gateway/observe/logging.hpp"
#include "gateway/observe/process_stats.hpp"
#include "gateway/server/server.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>

namespace {

constexpr const char* usage =
    "usage: gateway --config FILE     run the gateway\n"
    "       gateway --check FILE      validate a configuration (exit 0 if valid, 2 otherwise), opening the\n"
    "                                 files it names (SQLite databases, TLS files) as a start here would\n"
    "       gateway --check --offline FILE\n"
    "                                 the same without reading any file but FILE: a configuration meant\n"
    "                                 for another machine (a pod), checked in a pipeline before the deploy\n"
    "       gateway --version | --help\n";

int check(const std::string& file, bool offline) {
  auto result = gateway::load_config_file(file, {.offline = offline});
  if (result.config && !offline) result.errors = gateway::check_local_files(*result.config);
  for (const auto& e : result.errors) std::cerr << gateway::format_config_error(file, e) << '\n';
  if (!result.errors.empty()) return 2;
  for (const auto& w : result.warnings) std::cerr << gateway::format_config_warning(file, w) << '\n';
  std::cout << file << ": ok\n";
  return 0;
}

int run(const std::string& file) {
  gateway::config_error unreadable;
  const auto text = gateway::read_config_text(file, unreadable);
  if (!text) {
    std::cerr << gateway::format_config_error(file, unreadable) << '\n';
    return 2;
  }
  auto result = gateway::load_config_text(*text, file);
  if (!result.config) {
    for (const auto& e : result.errors) std::cerr << gateway::format_config_error(file, e) << '\n';
    return 2;
  }
  // Signals are taken synchronously by a dedicated thread, so no handler runs on an I/O thread. They are
  // blocked before any thread starts (threads inherit the mask), else one of them could take SIGTERM.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  gateway::setup_diagnostic_log(result.config->log.format, result.config->log.level);
  for (const auto& w : result.warnings) spdlog::warn("{}", gateway::format_config_warning(file, w));

  spdlog::info("open-file limit: {}", gateway::raise_open_file_limit());

  std::unique_ptr<gateway::server> srv;
  try {
    srv = std::make_unique<gateway::server>(*result.config, gateway::config_version(*text));
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    return 1;
  }
  const auto ep = srv->local_endpoint();
  const auto admin = srv->admin_endpoint();
  spdlog::info("gateway {} on {} I/O threads", GATEWAY_VERSION, srv->threads());

  // SIGHUP: reload the configuration (any number of times). First SIGTERM or SIGINT: graceful drain.
  // Second: stop at once (in-flight requests cancelled).
  std::atomic<bool> finished{false};
  std::thread signal_thread([&] {
    bool draining = false;
    for (;;) {
      int sig = 0;
      sigwait(&signals, &sig);
      if (finished) return;
      if (sig == SIGHUP) {
        if (draining) continue;
        spdlog::info("signal {} received: reloading the configuration", sig);
        srv->reload();
        continue;
      }
      if (!draining) {
        draining = true;
        spdlog::info("signal {} received: draining", sig);
        srv->drain();
        continue;
      }
      spdlog::info("signal {} received again: stopping now", sig);
      srv->stop();
      return;
    }
  });
  // The listeners' lines go to stdout, in the log's format, when both listen (scripts wait for them).
  srv->run([&] {
    const auto format = result.config->log.format;
    gateway::print_startup_line(format, "gateway listening on " + ep.address().to_string() + ":" +
                                            std::to_string(ep.port()) +
                                            (result.config->server.tls.enabled ? " (tls)" : ""));
    gateway::print_startup_line(
        format, "admin listening on " + admin.address().to_string() + ":" + std::to_string(admin.port()));
  });
  // Wake the signal thread if it still waits.
  finished = true;
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  spdlog::info("gateway stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("gateway"));
  const std::string arg = argc > 1 ? argv[1] : "";
  if (arg == "--version") {
    std::cout << "gateway " << GATEWAY_VERSION << '\n';
    return 0;
  }
  if (arg == "--help" || arg == "-h") {
    std::cout << usage;
    return 0;
  }
  if (argc == 3 && arg == "--check") return check(argv[2], false);
  if (argc == 4 && arg == "--check" && std::string(argv[2]) == "--offline") return check(argv[3], true);
  if (argc == 3 && arg == "--config") {
    const int code = run(argv[2]);
    spdlog::shutdown();  // writes what the asynchronous log still holds (bounded: its sink never waits long)
    return code;
  }
  std::cerr << usage;
  return 2;
}
