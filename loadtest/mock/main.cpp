// mock-downstream: a configurable HTTP/1.1 service standing in for the gateway's downstream services in
// the demo, the integration tests and the benchmark. See `mock-downstream --help` and loadtest/mock/.

#include "loadtest/mock/options.hpp"
#include "loadtest/mock/path_registry.hpp"
#include "loadtest/mock/replies.hpp"
#include "loadtest/mock/server.hpp"
#include "loadtest/mock/tls_server.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/signal_set.hpp>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace net = boost::asio;

namespace {

// The paths of the command line and the profile; false (with a message) when the registry refuses one.
bool configure(mock::path_registry& registry, const mock::mock_options& options) {
  std::string error;
  for (const auto& path : options.paths) {
    if (error.empty()) error = registry.configure(path.name, {path.how, path.delay, std::nullopt});
  }
  for (const auto& body : options.bodies) {
    if (error.empty()) error = registry.configure(body.name, {std::nullopt, std::nullopt, body.json});
  }
  if (!error.empty()) std::cerr << "mock-downstream: " << error << "\n";
  return error.empty();
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  std::string error;
  const auto options = mock::parse_command_line(args, error);
  if (!options) {
    std::cerr << "mock-downstream: " << error << " (see --help)\n";
    return 2;
  }
  if (options->help) {
    std::cout << mock::usage();
    return 0;
  }
  std::vector<net::ip::tcp::endpoint> listen;
  const std::size_t first_tls = options->listen.size();  // HTTPS endpoints follow the plain ones
  std::vector<mock::listen_address> all = options->listen;
  all.insert(all.end(), options->tls.listen.begin(), options->tls.listen.end());
  for (const auto& l : all) {
    boost::system::error_code ec;
    const auto address = net::ip::make_address(l.host, ec);
    if (ec) {
      std::cerr << "mock-downstream: bad listen address '" << l.host << "'\n";
      return 2;
    }
    listen.emplace_back(address, l.port);
  }

  // stdout carries only the "listening" lines that test harnesses wait for.
  spdlog::set_default_logger(spdlog::stderr_color_mt("mock-downstream"));

  try {
    net::io_context signal_context(1);
    net::signal_set signals(signal_context, SIGINT, SIGTERM);
    signals.async_wait([](const boost::system::error_code&, int) {});

    // Declared before the server, whose destructor stops the threads that use it.
    std::optional<mock::path_registry> registry;
    std::optional<mock::tls_server> tls;
    mock::server server(listen, options->threads, options->backlog);
    if (!options->tls.listen.empty()) server.enable_tls(first_tls, tls.emplace(options->tls));
    const auto bound = server.local_endpoints();
    std::vector<unsigned short> ports;
    for (const auto& b : bound) {
      // An endpoint is named by its port in /__stats and /__control.
      if (std::find(ports.begin(), ports.end(), b.port()) != ports.end()) {
        std::cerr << "mock-downstream: two listeners on port " << b.port() << "\n";
        return 2;
      }
      ports.push_back(b.port());
    }
    registry.emplace(options->default_delay, ports, options->seed);
    mock::set_cache_control(options->cache_control);
    registry->record_headers(options->record_headers);
    if (!configure(*registry, *options)) return 2;

    server.start(*registry);
    for (std::size_t i = 0; i < bound.size(); ++i) {
      const auto& b = bound[i];
      const auto host = b.address().to_string();
      std::printf("mock-downstream listening on %s%s%s:%u%s\n", b.address().is_v6() ? "[" : "", host.c_str(),
                  b.address().is_v6() ? "]" : "", static_cast<unsigned>(b.port()),
                  i >= first_tls ? " (tls)" : "");
    }
    std::fflush(stdout);

    signal_context.run();
    server.stop();
  } catch (const std::exception& e) {
    std::cerr << "mock-downstream: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
