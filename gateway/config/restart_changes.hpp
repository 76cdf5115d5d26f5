#pragma once
// The settings a reload cannot apply: those of the sections only a restart applies (all but downstreams,
// routes and log.level) whose value in a loaded file differs from the running one, each with both values
// as /config shows them (effective_config_json: DSNs and secrets redacted). A changed admin.token is one
// of them though both of its values show as "<redacted>". Pure; throws nothing but std::bad_alloc.

#include "gateway/config/config.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gateway {

struct restart_change {
  std::string key;         // "server.listen", "admin.token", ...
  nlohmann::json running;  // null when the running configuration has no such key
  nlohmann::json file;     // null when the file's has none
};

// In the order of the keys of effective_config_json (sorted), then admin.token.
std::vector<restart_change> restart_only_changes(const gateway_config& running, const gateway_config& file);

// Just the keys, in the same order.
std::vector<std::string> restart_change_keys(const std::vector<restart_change>& changes);

// {"server.listen": {"running": ..., "file": ...}, ...}, for /config.
nlohmann::json restart_changes_json(const std::vector<restart_change>& changes);

}  // namespace gateway
