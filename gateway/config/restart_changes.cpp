#include "gateway/config/restart_changes.hpp"

#include "gateway/config/config_json.hpp"

namespace gateway {
namespace {

bool applies_live(const std::string& key) {
  return key == "source" || key == "downstreams" || key == "routes" || key == "log.level";
}

void compare(const nlohmann::json& running, const nlohmann::json& file, const std::string& at,
             std::vector<restart_change>& out) {
  if (!running.is_object() || !file.is_object()) {
    if (running != file) out.push_back({at, running, file});
    return;
  }
  for (const auto& [key, value] : file.items()) {
    const auto path = at.empty() ? key : at + "." + key;
    if (applies_live(path)) continue;
    const auto there = running.find(key);
    compare(there != running.end() ? *there : nlohmann::json(), value, path, out);
  }
  for (const auto& [key, value] : running.items()) {
    const auto path = at.empty() ? key : at + "." + key;
    if (!file.contains(key) && !applies_live(path)) out.push_back({path, value, nullptr});
  }
}

}  // namespace

std::vector<restart_change> restart_only_changes(const gateway_config& running, const gateway_config& file) {
  std::vector<restart_change> out;
  compare(effective_config_json(running), effective_config_json(file), "", out);
  // Both tokens set: /config shows each as "<redacted>", so the comparison above cannot tell them apart.
  if (!running.admin.token.empty() && !file.admin.token.empty() && running.admin.token != file.admin.token)
    out.push_back({"admin.token", redacted, redacted});
  return out;
}

std::vector<std::string> restart_change_keys(const std::vector<restart_change>& changes) {
  std::vector<std::string> keys;
  for (const auto& c : changes) keys.push_back(c.key);
  return keys;
}

nlohmann::json restart_changes_json(const std::vector<restart_change>& changes) {
  auto j = nlohmann::json::object();
  for (const auto& c : changes) j[c.key] = {{"running", c.running}, {"file", c.file}};
  return j;
}

}  // namespace gateway
