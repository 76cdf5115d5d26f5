#pragma once
// JSON strings handled by hand on hot paths: written (merged answers, access log lines, error bodies) and
// read back (keys with escapes, values taken from an answer). Pure functions.

#include <string>
#include <string_view>

namespace gateway {

// Appends `value` as a JSON string. Plain printable ASCII is copied between quotes; anything else is
// escaped, with invalid UTF-8 replaced, so the output is always valid JSON.
void append_json_string(std::string& out, std::string_view value);

// Appends the characters of a JSON string to `out`, given its text between the quotes as written in a
// document: escapes resolved, a \u surrogate pair combined into one UTF-8 character and a lone surrogate
// written as U+FFFD; any other byte is copied as it is (a validated document's text is UTF-8 already).
// False, with `out` holding what came before, on a malformed escape or a bare '"', which valid JSON never
// has.
bool append_decoded_json_string(std::string& out, std::string_view escaped);

}  // namespace gateway
