#pragma once
// What logs and spans show of a request target: its query values that may be secrets replaced by
// "REDACTED" (OpenTelemetry's url.full convention). Pure.

#include <cstddef>
#include <string>
#include <string_view>

namespace gateway {

// Whether a query parameter's name (percent-decoded) says its value may be a secret: a credential's name
// (credential_name: auth, key, token, secret, password, session, ...), or a signature ("signature", "sig",
// "X-Goog-Signature"), or an OAuth authorization "code".
bool secret_query_name(std::string_view name);

// Appends `target` ("/path?a=1&token=x") to `out` with each secret parameter's value replaced by
// "REDACTED", keeping the names, the order and the path as they came. At most `max_bytes` of it are
// appended; a longer one is cut and ends with "...".
void append_redacted_target(std::string& out, std::string_view target, std::size_t max_bytes = 2048);

}  // namespace gateway
