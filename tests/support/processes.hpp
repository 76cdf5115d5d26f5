#pragma once
// The two processes under test, started on port 0 in a private temporary directory:
// mock-downstream (controlled through /__mode, /__control, /__stats) and the gateway (with a config file
// written for the test). Startup waits for the "listening on HOST:PORT" line (one per mock endpoint) with a
// bound and throws std::runtime_error with the process's stderr if it does not come.

#include "tests/support/child_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/temp_dir.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace test_support {

// Every byte of `s` outside A-Z a-z 0-9 and `kept` as %XX (by default RFC 3986's unreserved characters).
std::string percent_encoded(const std::string& s, std::string_view kept = "-._~");

class mock_downstream {
 public:
  // `args` come after `--listen LISTEN`, e.g. {"--delay", "20ms", "--path", "coupon=hang"}.
  explicit mock_downstream(const std::vector<std::string>& args = {},
                           const std::string& listen = "127.0.0.1:0");
  // `endpoints` listeners on 127.0.0.1:0, each an endpoint of the same downstream; `args` as above.
  mock_downstream(std::size_t endpoints, const std::vector<std::string>& args);

  // The first endpoint's port and URL.
  std::uint16_t port() const { return ports_.front(); }
  std::string url() const { return url(0); }
  // Every endpoint's port, in listener order, and the URL of endpoint `i`.
  const std::vector<std::uint16_t>& ports() const { return ports_; }
  std::string url(std::size_t i) const { return "http://127.0.0.1:" + std::to_string(ports_.at(i)); }
  child_process& process() { return *process_; }

  // GET /__mode?path=NAME&mode=MODE[&delay=DELAY]; throws unless it answers 200.
  void set_mode(const std::string& path, const std::string& mode, const std::string& delay = "");
  // POST /__control?path=NAME[&mode=MODE][&latency=LATENCY][&port=PORT] (an empty argument is left out;
  // port 0: every endpoint); throws unless it answers 200. LATENCY: "20ms" or "1ms,p50=300ms".
  void control(const std::string& path, const std::string& mode, const std::string& delay_or_latency = "",
               std::uint16_t port = 0);
  // POST /__control?path=NAME&body=JSON[&port=PORT]: the path's ok answers send `json` ("" goes back to
  // the generated body); throws unless it answers 200.
  void set_body(const std::string& path, const std::string& json, std::uint16_t port = 0);
  // POST /__control?path=NAME&header=Name:Value...: the path's answers carry these fields besides the
  // mock's own (none: back to none); throws unless it answers 200.
  void set_headers(const std::string& path, const std::vector<std::string>& fields);
  // GET /__stats as JSON.
  nlohmann::json stats();
  // Per-path counter from /__stats (0 when the path has not been seen).
  long long path_counter(const nlohmann::json& stats, const std::string& path, const std::string& counter);
  // Counter of the endpoint on `port` ("requests", "cancelled", "connections_total", ...), or of one
  // path on it when `path` is given; 0 when absent.
  long long endpoint_counter(const nlohmann::json& stats, std::uint16_t port, const std::string& counter,
                             const std::string& path = "");
  // Polls /__stats until `done(stats)` holds or `timeout` passes; returns the last stats seen.
  nlohmann::json wait_stats(const std::function<bool(const nlohmann::json&)>& done,
                            std::chrono::milliseconds timeout = std::chrono::milliseconds(2000));

 private:
  void start(const std::vector<std::string>& listen, const std::vector<std::string>& args);
  void post_control(const std::string& query);

  temp_dir dir_;
  std::unique_ptr<child_process> process_;
  std::vector<std::uint16_t> ports_;
};

// Starts the gateway on `config_yaml`. Unless the config has its own sections, the admin listener goes
// to 127.0.0.1:0 and shutdown.drain_delay is 0 (so that tests don't wait 5 s at every exit).
class gateway_process {
 public:
  explicit gateway_process(const std::string& config_yaml);

  std::uint16_t port() const { return port_; }
  std::uint16_t admin_port() const { return admin_port_; }
  child_process& process() { return *process_; }
  bool running() { return process_->running(); }
  const std::string& config_path() const { return config_path_; }

 private:
  temp_dir dir_;
  std::string config_path_;
  std::unique_ptr<child_process> process_;
  std::uint16_t port_ = 0;
  std::uint16_t admin_port_ = 0;
};

// The seed route's six calls, in call order (call name == downstream name == mock path).
extern const std::vector<std::string> seed_calls;

// Builds a config for the seed route against one mock; each knob changes one aspect.
struct seed_config {
  explicit seed_config(std::string url) : mock_url(std::move(url)) {}

  std::string mock_url;  // every downstream's url unless overridden
  std::string deadline = "800ms";
  unsigned threads = 2;
  std::string connect_timeout = "100ms";
  unsigned max_connections = 64;  // per downstream (the gateway keeps one pool per I/O thread)
  std::string limits;             // body of a "limits:" section, e.g. "  header_timeout: 300ms\n"
  std::string downstream_extra;   // lines added to every downstream, e.g. "    max_response_bytes: 4194304\n"
  std::string response = "array";
  std::map<std::string, std::string> url_override;         // downstream -> url
  std::map<std::string, std::string> call_timeout;         // call -> duration
  std::vector<std::string> required_calls;                 // calls with required: true
  std::map<std::string, std::vector<std::string>> fields;  // call -> allowlist

  std::string yaml() const;
};

// The fallback used by seed_config for every call.
inline constexpr int fallback_price = -1;
inline constexpr int fallback_stock = 0;

}  // namespace test_support
