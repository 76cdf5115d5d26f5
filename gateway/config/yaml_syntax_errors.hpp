#pragma once
// What the writer of a YAML file did wrong, from yaml-cpp's parser messages ("illegal map value", "end of
// map not found", "unknown escape character: q", ...) and the text around the place it gave up: "bad
// indentation at line 4 (...)", "unclosed quote opened at line 2 (...)", "unclosed '[' opened at line 7". A
// message it has no better words for is kept as yaml-cpp wrote it. Pure functions of the text; never throw.

#include "gateway/config/config_loader.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace gateway {

// The message for yaml-cpp's `message`, raised at the 0-based `line` and `column` of `text`.
std::string explain_yaml_error(std::string_view text, const std::string& message, int line, int column);

// yaml-cpp takes the end of the text as the end of a quoted value that was never closed: such a quote,
// reported where it opens (1-based), or nothing.
std::optional<config_error> quote_open_at_end(std::string_view text);

}  // namespace gateway
