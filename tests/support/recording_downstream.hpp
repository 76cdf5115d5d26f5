#pragma once
// A downstream for tests that keeps every request head it receives, byte for byte, and answers each with
// `200 {}` (keep-alive): what a path, a field or a framing trick reaches behind the gateway. A plain
// socket on 127.0.0.1 and one thread; every wait is bounded, and the destructor stops it.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace test_support {

class recording_downstream {
 public:
  recording_downstream();
  recording_downstream(const recording_downstream&) = delete;
  recording_downstream& operator=(const recording_downstream&) = delete;
  ~recording_downstream();

  std::uint16_t port() const { return port_; }
  std::string url(const std::string& base_path = "") const {
    return "http://127.0.0.1:" + std::to_string(port_) + base_path;
  }
  // The heads received so far ("GET /x HTTP/1.1\r\nHost: ...\r\n\r\n"), in order.
  std::vector<std::string> heads() const;
  // The request-target of each head received so far.
  std::vector<std::string> targets() const;
  // The value of field `name` (case-insensitive) in the last head, or "<absent>"; several joined by ", ".
  std::string last_field(const std::string& name) const;

 private:
  void run();
  void serve(int fd);

  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::vector<std::string> heads_;
  std::thread thread_;
};

}  // namespace test_support
