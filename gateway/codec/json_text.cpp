#include "gateway/codec/json_text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace gateway {

void append_json_string(std::string& out, std::string_view value) {
  const bool plain = std::all_of(value.begin(), value.end(),
                                 [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
  if (plain) {
    out += '"';
    out.append(value);
    out += '"';
    return;
  }
  out += nlohmann::json(value).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace gateway
