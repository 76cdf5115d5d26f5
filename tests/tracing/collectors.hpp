#pragma once
// Collectors for the tracer's export tests: the Node receiver that decodes exports with the official
// OTLP definitions (receiver/receiver.js), and ports that refuse connections or accept and never answer.
// Each throws std::runtime_error saying what is missing when it cannot start.

#include "tests/support/child_process.hpp"
#include "tests/support/temp_dir.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace test_support {

// The Node receiver on an ephemeral port, writing what it decodes to a file of JSON lines (the format is
// described in receiver.js). Needs node on PATH and the fixture's npm ci in `receiver_dir`. With
// `close_kept` it closes each connection right after answering, though the answer says keep-alive.
class otlp_receiver {
 public:
  explicit otlp_receiver(const std::string& receiver_dir, bool close_kept = false);

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1/traces"; }
  // One JSON object per request received so far (each written before the receiver answered it).
  std::vector<nlohmann::json> requests() const;
  std::string errors() const { return process_->stderr_text(); }

 private:
  temp_dir dir_;
  std::string out_ = dir_.file("requests.jsonl");
  std::optional<child_process> process_;
  int port_ = 0;
};

// A loopback port that refuses connections (bound, then closed: `listening` false), or one whose socket
// listens but nobody accepts from it (`listening` true): the kernel completes connections into the
// backlog, nothing reads and nothing answers, as with a hung collector.
class silent_collector {
 public:
  explicit silent_collector(bool listening);
  ~silent_collector();
  silent_collector(const silent_collector&) = delete;
  silent_collector& operator=(const silent_collector&) = delete;

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1/traces"; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace test_support
