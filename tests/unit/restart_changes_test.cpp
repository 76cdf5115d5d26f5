#include "gateway/config/restart_changes.hpp"
#include "gateway/config/config_loader.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace gateway;

namespace {

const std::string base = R"(server:
  listen: 127.0.0.1:8080
  threads: 2
admin:
  listen: 127.0.0.1:9901
  token: first-admin-token-0123
downstreams:
  inventory:
    url: http://127.0.0.1:9001/
routes:
  - path: /a
    calls:
      - name: inventory
        downstream: inventory
        path: /inventory
        fallback: {}
)";

gateway_config load(const std::string& text) {
  auto r = load_config_text(text, "t.yaml");
  REQUIRE(r.config);
  return std::move(*r.config);
}

std::string edit(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("restart changes: none for the same file, nor for what a reload applies", "[config][restart]") {
  const auto running = load(base);
  CHECK(restart_only_changes(running, load(base)).empty());
  auto live = edit(base, "path: /a", "path: /b");
  live = edit(live, "9001/", "9002/");
  live += "log:\n  level: debug\n";
  CHECK(restart_only_changes(running, load(live)).empty());
}

TEST_CASE("restart changes: each key with its running and file values, secrets redacted",
          "[config][restart]") {
  const auto running = load(base);
  auto text = edit(base, "listen: 127.0.0.1:8080", "listen: 127.0.0.1:8081");
  text = edit(text, "first-admin-token-0123", "second-admin-token-0123");
  text += "shutdown:\n  drain_delay: 1s\n";
  const auto changes = restart_only_changes(running, load(text));
  REQUIRE(restart_change_keys(changes) ==
          std::vector<std::string>{"server.listen", "shutdown.drain_delay", "admin.token"});
  CHECK(changes[0].running == "127.0.0.1:8080");
  CHECK(changes[0].file == "127.0.0.1:8081");
  CHECK(changes[1].running == "5s");
  CHECK(changes[1].file == "1s");
  CHECK(changes[2].running == "<redacted>");
  CHECK(changes[2].file == "<redacted>");
  const auto shown = restart_changes_json(changes).dump();
  CHECK(shown.find("admin-token") == std::string::npos);
  CHECK(restart_changes_json(changes).at("server.listen") ==
        nlohmann::json({{"running", "127.0.0.1:8080"}, {"file", "127.0.0.1:8081"}}));
}

TEST_CASE("restart changes: a token set or removed is a change of admin.token", "[config][restart]") {
  const auto without = edit(base, "  token: first-admin-token-0123\n", "");
  const auto added = restart_only_changes(load(without), load(base));
  REQUIRE(restart_change_keys(added) == std::vector<std::string>{"admin.token"});
  CHECK(added[0].running.is_null());
  CHECK(added[0].file == "<redacted>");
  CHECK(restart_change_keys(restart_only_changes(load(base), load(without))) ==
        std::vector<std::string>{"admin.token"});
}
