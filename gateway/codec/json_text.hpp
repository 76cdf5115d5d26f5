#pragma once
// Writing JSON text by hand on hot paths (merged answers, access log lines, error bodies).

#include <string>
#include <string_view>

namespace gateway {

// Appends `value` as a JSON string. Plain printable ASCII is copied between quotes; anything else is
// escaped, with invalid UTF-8 replaced, so the output is always valid JSON.
void append_json_string(std::string& out, std::string_view value);

}  // namespace gateway
