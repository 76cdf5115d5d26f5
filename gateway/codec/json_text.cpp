#include "gateway/codec/json_text.hpp"

#include <boost/url/grammar/hexdig_chars.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>

namespace gateway {
namespace {

// The four hex digits of a \u escape at the front of `s`.
std::optional<unsigned> hex4(std::string_view s) {
  if (s.size() < 4) return std::nullopt;
  unsigned v = 0;
  for (std::size_t k = 0; k < 4; ++k) {
    const int h = boost::urls::grammar::hexdig_value(s[k]);
    if (h < 0) return std::nullopt;
    v = v * 16 + static_cast<unsigned>(h);
  }
  return v;
}

void append_utf8(std::string& out, unsigned cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

constexpr unsigned replacement_character = 0xFFFD;

}  // namespace

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

bool append_decoded_json_string(std::string& out, std::string_view escaped) {
  while (!escaped.empty()) {
    const auto special = escaped.find_first_of("\\\"");
    out.append(escaped.substr(0, special));
    if (special == std::string_view::npos) return true;
    if (escaped[special] == '"' || special + 1 == escaped.size()) return false;
    const char e = escaped[special + 1];
    escaped.remove_prefix(special + 2);
    switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        continue;
      case 'b':
        out += '\b';
        continue;
      case 'f':
        out += '\f';
        continue;
      case 'n':
        out += '\n';
        continue;
      case 'r':
        out += '\r';
        continue;
      case 't':
        out += '\t';
        continue;
      case 'u':
        break;
      default:
        return false;
    }
    const auto cp = hex4(escaped);
    if (!cp) return false;
    escaped.remove_prefix(4);
    if (*cp < 0xD800 || *cp > 0xDFFF) {
      append_utf8(out, *cp);
      continue;
    }
    // A high surrogate and the low one right after it make one character; any other surrogate stands
    // alone and is written as the replacement character, as decoders that do not refuse it do.
    if (*cp <= 0xDBFF && escaped.size() >= 6 && escaped[0] == '\\' && escaped[1] == 'u') {
      const auto low = hex4(escaped.substr(2));
      if (low && *low >= 0xDC00 && *low <= 0xDFFF) {
        append_utf8(out, 0x10000 + ((*cp - 0xD800) << 10) + (*low - 0xDC00));
        escaped.remove_prefix(6);
        continue;
      }
    }
    append_utf8(out, replacement_character);
  }
  return true;
}

}  // namespace gateway
