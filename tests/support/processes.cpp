#include "tests/support/processes.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <regex>
#include <thread>

namespace test_support {
namespace {

using namespace std::chrono_literals;

const std::regex listening_line(R"(listening on ([0-9.]+):([0-9]+))");
const std::regex admin_line(R"(admin listening on ([0-9.]+):([0-9]+))");
constexpr milliseconds startup_timeout = 10s;

std::uint16_t wait_listening(child_process& child, const std::string& what,
                             const std::regex& line = listening_line) {
  auto groups = child.wait_for_line(line, startup_timeout);
  if (!groups) {
    throw std::runtime_error(what + " did not report 'listening on HOST:PORT' within " +
                             std::to_string(startup_timeout.count()) + " ms (" + child.command_line() +
                             ")\nstdout:\n" + child.stdout_text() + "\nstderr:\n" + child.stderr_text());
  }
  int port = std::stoi((*groups)[2]);
  if (port <= 0 || port > 65535) throw std::runtime_error(what + " reported a bad port " + (*groups)[2]);
  return static_cast<std::uint16_t>(port);
}

// The binary under test: the one built with the tests, or another one named in the environment (to run a
// test against an older build, e.g. to see it fail before a fix).
std::string binary(const char* variable, const char* built) {
  const char* chosen = std::getenv(variable);
  return chosen != nullptr && *chosen != '\0' ? chosen : built;
}

std::string quote(const std::string& s) {
  return "'" + s + "'";
}

}  // namespace

const std::vector<std::string> seed_calls = {"inventory",      "channel-price", "coupon",
                                             "review-summary", "logistics-eta", "recommendation"};

mock_downstream::mock_downstream(const std::vector<std::string>& args, const std::string& listen) {
  start({listen}, args);
}

mock_downstream::mock_downstream(std::size_t endpoints, const std::vector<std::string>& args) {
  start(std::vector<std::string>(std::max<std::size_t>(endpoints, 1), "127.0.0.1:0"), args);
}

void mock_downstream::start(const std::vector<std::string>& listen, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {binary("TEST_MOCK_BIN", MOCK_BIN)};
  for (const auto& address : listen) {
    argv.push_back("--listen");
    argv.push_back(address);
  }
  argv.insert(argv.end(), args.begin(), args.end());
  process_ = std::make_unique<child_process>(argv, dir_.file("mock.stderr"));
  // One "listening on" line per listener, in order.
  for (std::size_t i = 0; i < listen.size(); ++i)
    ports_.push_back(wait_listening(*process_, "mock-downstream"));
}

void mock_downstream::set_mode(const std::string& path, const std::string& mode, const std::string& delay) {
  std::string target = "/__mode?path=" + path + "&mode=" + mode;
  if (!delay.empty()) target += "&delay=" + delay;
  auto res = http_get(port(), target);
  if (res.status != 200)
    throw std::runtime_error("mock " + target + " answered " + std::to_string(res.status));
}

void mock_downstream::control(const std::string& path, const std::string& mode,
                              const std::string& delay_or_latency, std::uint16_t port) {
  std::string query = "path=" + percent_encoded(path);
  if (!mode.empty()) query += "&mode=" + percent_encoded(mode);
  if (!delay_or_latency.empty()) query += "&latency=" + percent_encoded(delay_or_latency);
  if (port != 0) query += "&port=" + std::to_string(port);
  post_control(query);
}

void mock_downstream::set_body(const std::string& path, const std::string& json, std::uint16_t port) {
  std::string query = "path=" + percent_encoded(path) + "&body=" + percent_encoded(json);
  if (port != 0) query += "&port=" + std::to_string(port);
  post_control(query);
}

void mock_downstream::set_headers(const std::string& path, const std::vector<std::string>& fields) {
  std::string query = "path=" + percent_encoded(path);
  if (fields.empty()) query += "&header=";
  for (const auto& f : fields) query += "&header=" + percent_encoded(f);
  post_control(query);
}

void mock_downstream::post_control(const std::string& query) {
  const std::string target = "/__control?" + query;
  http_connection conn(port());
  auto res = conn.request("POST", target);
  if (res.status != 200) {
    throw std::runtime_error("mock POST " + target + " answered " + std::to_string(res.status) + ": " +
                             res.body);
  }
}

nlohmann::json mock_downstream::stats() {
  auto res = http_get(port(), "/__stats");
  if (res.status != 200) throw std::runtime_error("mock /__stats answered " + std::to_string(res.status));
  return res.json();
}

long long mock_downstream::path_counter(const nlohmann::json& stats, const std::string& path,
                                        const std::string& counter) {
  if (!stats.contains("paths") || !stats["paths"].contains(path)) return 0;
  const auto& value = stats["paths"][path];
  return value.contains(counter) ? value[counter].get<long long>() : 0;
}

long long mock_downstream::endpoint_counter(const nlohmann::json& stats, std::uint16_t port,
                                            const std::string& counter, const std::string& path) {
  const auto key = std::to_string(port);
  if (!stats.contains("endpoints") || !stats["endpoints"].contains(key)) return 0;
  const auto* value = &stats["endpoints"][key];
  if (!path.empty()) {
    if (!value->contains("paths") || !(*value)["paths"].contains(path)) return 0;
    value = &(*value)["paths"][path];
  }
  return value->contains(counter) ? (*value)[counter].get<long long>() : 0;
}

nlohmann::json mock_downstream::wait_stats(const std::function<bool(const nlohmann::json&)>& done,
                                           milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (auto pause = 2ms;; pause = std::min(pause * 2, milliseconds(25))) {
    auto s = stats();
    if (done(s) || std::chrono::steady_clock::now() >= deadline) return s;
    std::this_thread::sleep_for(pause);
  }
}

namespace {

bool has_section(const std::string& yaml, const std::string& name) {
  return yaml.rfind(name + ":", 0) == 0 || yaml.find("\n" + name + ":") != std::string::npos;
}

}  // namespace

gateway_process::gateway_process(const std::string& config_yaml) {
  std::string yaml = config_yaml;
  if (!yaml.empty() && yaml.back() != '\n') yaml += '\n';
  if (!has_section(yaml, "admin")) yaml += "admin:\n  listen: 127.0.0.1:0\n";
  if (!has_section(yaml, "shutdown")) yaml += "shutdown:\n  drain_delay: 0s\n";
  config_path_ = dir_.write("gateway.yaml", yaml);
  process_ = std::make_unique<child_process>(
      std::vector<std::string>{binary("TEST_GATEWAY_BIN", GATEWAY_BIN), "--config", config_path_},
      dir_.file("gateway.stderr"));
  port_ = wait_listening(*process_, "gateway");
  admin_port_ = wait_listening(*process_, "gateway admin", admin_line);
}

std::string seed_config::yaml() const {
  std::string y;
  y += "server:\n";
  y += "  listen: 127.0.0.1:0\n";
  y += "  threads: " + std::to_string(threads) + "\n";
  if (!limits.empty()) y += "limits:\n" + limits;
  y += "downstreams:\n";
  for (const auto& name : seed_calls) {
    auto over = url_override.find(name);
    y += "  " + name + ":\n";
    y += "    url: " + (over != url_override.end() ? over->second : mock_url) + "\n";
    y += "    connect_timeout: " + connect_timeout + "\n";
    y += "    max_connections: " + std::to_string(max_connections) + "\n";
    y += downstream_extra;
  }
  y += "routes:\n";
  y += "  - path: /api/offer/aggregate\n";
  y += "    method: GET\n";
  y += "    deadline: " + deadline + "\n";
  y += "    params:\n";
  y += "      sku: {required: true, pattern: " + quote("^[A-Za-z0-9_-]{1,64}$") + "}\n";
  y += "    response: " + response + "\n";
  y += "    calls:\n";
  for (const auto& name : seed_calls) {
    y += "      - name: " + name + "\n";
    y += "        downstream: " + name + "\n";
    y += "        path: /" + name + "?sku={sku}\n";
    if (auto t = call_timeout.find(name); t != call_timeout.end())
      y += "        timeout: " + t->second + "\n";
    bool required = std::find(required_calls.begin(), required_calls.end(), name) != required_calls.end();
    y += std::string("        required: ") + (required ? "true" : "false") + "\n";
    if (auto f = fields.find(name); f != fields.end()) {
      y += "        fields: [";
      for (std::size_t i = 0; i < f->second.size(); ++i) y += (i ? ", " : "") + f->second[i];
      y += "]\n";
    }
    y += "        fallback: {priceCent: " + std::to_string(fallback_price) +
         ", stock: " + std::to_string(fallback_stock) + "}\n";
  }
  return y;
}

std::string percent_encoded(const std::string& s, std::string_view kept) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || kept.find(c) != std::string_view::npos) {
      out += c;
    } else {
      out += '%';
      out += hex[u >> 4];
      out += hex[u & 0xf];
    }
  }
  return out;
}

}  // namespace test_support
