#include "tests/tracing/collectors.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace test_support {

namespace {

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "";
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    const std::string dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

}  // namespace

otlp_receiver::otlp_receiver(const std::string& receiver_dir, bool close_kept) {
  const std::string node = find_on_path("node");
  if (node.empty()) {
    throw std::runtime_error("node is not on PATH: this test needs Node.js and npm (scripts/setup.sh test)");
  }
  const std::string module =
      receiver_dir + "/node_modules/@opentelemetry/otlp-proto-exporter-base/build/src/generated/root.js";
  if (::access(module.c_str(), R_OK) != 0) {
    throw std::runtime_error(module +
                             " is missing: the receiver's npm ci (a ctest fixture) did not run or failed");
  }
  std::vector<std::string> argv{node, receiver_dir + "/receiver.js", out_};
  if (close_kept) argv.push_back("--close-kept");
  process_.emplace(std::move(argv), dir_.file("receiver.err"));
  const auto line = process_->wait_for_line(std::regex(R"(listening on (\d+))"), std::chrono::seconds(10));
  if (!line) throw std::runtime_error("the OTLP receiver did not start: " + process_->stderr_text());
  port_ = std::stoi((*line)[1]);
}

std::vector<nlohmann::json> otlp_receiver::requests() const {
  std::vector<nlohmann::json> out;
  std::ifstream in(out_);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

silent_collector::silent_collector(bool listening) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      (listening && ::listen(fd_, 16) != 0)) {
    const int error = errno;
    ::close(fd_);
    throw std::runtime_error(std::string("silent_collector: ") + std::strerror(error));
  }
  port_ = ntohs(addr.sin_port);
  if (!listening) ::close(std::exchange(fd_, -1));
}

silent_collector::~silent_collector() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace test_support
