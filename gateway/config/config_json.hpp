#pragma once
// The effective configuration (defaults filled in) as JSON, for the admin /config endpoint. Secrets are
// redacted: database DSNs (they may hold passwords) and anything that came from ${ENV}.

#include "gateway/config/config.hpp"

#include <nlohmann/json.hpp>

namespace gateway {

inline constexpr const char* redacted = "<redacted>";

nlohmann::json effective_config_json(const gateway_config& config);

// "0.0.0.0:8080", "[::1]:9901".
std::string format_listen(const listen_address& a);

}  // namespace gateway
