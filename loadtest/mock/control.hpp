#pragma once
// The queries of the runtime controls, parsed into a change of the path registry. Pure, no I/O.
//   /__mode?path=NAME&mode=MODE[&delay=LATENCY]           (GET; other parameters are ignored, as always)
//   /__control?path=NAME[&mode=MODE][&delay=LATENCY|&latency=LATENCY][&body=JSON][&port=P]
//             [&header=Name:Value]...                      (GET or POST; every parameter is checked)
// NAME is a path name or a prefix "PATH/*" (is_valid_setting_name). LATENCY is a delay with an optional
// tail ("150ms,p98=700ms", see latency.hpp); values are percent-decoded. An empty body goes back to the
// generated ok body. `header` (repeatable) replaces the fields the path's answers carry besides the
// mock's own; one empty `header=` removes them.

#include "loadtest/mock/path_registry.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace mock {

struct control_request {
  std::string path;
  path_change change;
  unsigned short port = 0;  // 0: every endpoint
};

enum class control_kind { mode, control };

// Returns nullopt and sets `error` for a missing, unknown or bad parameter.
std::optional<control_request> parse_control(std::string_view query, control_kind kind, std::string& error);

}  // namespace mock
