// mock-downstream: a configurable HTTP/1.1 service standing in for the gateway's downstream services in
// the demo, the integration tests and the benchmark. See `mock-downstream --help` and loadtest/mock/.

#include "loadtest/mock/options.hpp"
#include "loadtest/mock/path_registry.hpp"
#include "loadtest/mock/server.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/signal_set.hpp>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace net = boost::asio;

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
  boost::system::error_code ec;
  const auto address = net::ip::make_address(options->host, ec);
  if (ec) {
    std::cerr << "mock-downstream: bad listen address '" << options->host << "'\n";
    return 2;
  }

  // stdout carries only the "listening" line that test harnesses wait for.
  spdlog::set_default_logger(spdlog::stderr_color_mt("mock-downstream"));

  mock::path_registry registry(options->default_delay);
  for (const auto& path : options->paths) {
    if (!registry.configure(path.name, path.how, path.delay)) {
      std::cerr << "mock-downstream: too many paths\n";
      return 2;
    }
  }

  try {
    net::io_context signal_context(1);
    net::signal_set signals(signal_context, SIGINT, SIGTERM);
    signals.async_wait([](const boost::system::error_code&, int) {});

    mock::server server({address, options->port}, options->threads, registry);
    const auto bound = server.local_endpoint();
    server.start();
    const auto host = bound.address().to_string();
    std::printf("mock-downstream listening on %s%s%s:%u\n", bound.address().is_v6() ? "[" : "", host.c_str(),
                bound.address().is_v6() ? "]" : "", static_cast<unsigned>(bound.port()));
    std::fflush(stdout);

    signal_context.run();
    server.stop();
  } catch (const std::exception& e) {
    std::cerr << "mock-downstream: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
