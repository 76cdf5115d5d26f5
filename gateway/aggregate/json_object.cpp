#include "gateway/aggregate/json_object.hpp"

#include <nlohmann/json.hpp>

namespace gateway {
namespace {

constexpr int max_depth = 64;

class scanner {
 public:
  explicit scanner(std::string_view s) : s_(s) {}

  bool object_top(std::vector<json_member>& members) {
    members.reserve(8);  // most answers have a handful of members: one allocation instead of four
    skip_ws();
    if (!object(1, &members)) return false;
    skip_ws();
    return i_ == s_.size();
  }

 private:
  bool at(char c) const { return i_ < s_.size() && s_[i_] == c; }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }

  bool value(int depth) {
    if (i_ >= s_.size()) return false;
    switch (s_[i_]) {
      case '{':
        return object(depth + 1, nullptr);
      case '[':
        return array(depth + 1);
      case '"': {
        bool escaped = false;
        return string(escaped);
      }
      case 't':
        return literal("true");
      case 'f':
        return literal("false");
      case 'n':
        return literal("null");
      default:
        return number();
    }
  }

  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }

  bool object(int depth, std::vector<json_member>* members) {
    if (depth > max_depth || !at('{')) return false;
    ++i_;
    skip_ws();
    if (at('}')) {
      ++i_;
      return true;
    }
    for (;;) {
      skip_ws();
      json_member m;
      const auto key_start = i_ + 1;
      if (!at('"') || !string(m.key_escaped)) return false;
      m.key_pos = static_cast<std::uint32_t>(key_start);
      m.key_len = static_cast<std::uint32_t>(i_ - 1 - key_start);
      skip_ws();
      if (!at(':')) return false;
      ++i_;
      skip_ws();
      const auto value_start = i_;
      if (!value(depth)) return false;
      m.value_pos = static_cast<std::uint32_t>(value_start);
      m.value_len = static_cast<std::uint32_t>(i_ - value_start);
      if (members) members->push_back(m);
      skip_ws();
      if (at(',')) {
        ++i_;
        continue;
      }
      if (at('}')) {
        ++i_;
        return true;
      }
      return false;
    }
  }

  bool array(int depth) {
    if (depth > max_depth) return false;
    ++i_;  // '['
    skip_ws();
    if (at(']')) {
      ++i_;
      return true;
    }
    for (;;) {
      skip_ws();
      if (!value(depth)) return false;
      skip_ws();
      if (at(',')) {
        ++i_;
        continue;
      }
      if (at(']')) {
        ++i_;
        return true;
      }
      return false;
    }
  }

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  bool hex4(unsigned& out) {
    if (i_ + 4 > s_.size()) return false;
    out = 0;
    for (int k = 0; k < 4; ++k) {
      const int h = hex(s_[i_ + static_cast<std::size_t>(k)]);
      if (h < 0) return false;
      out = out * 16 + static_cast<unsigned>(h);
    }
    i_ += 4;
    return true;
  }

  // One UTF-8 sequence starting at i_ (first byte >= 0x80): well-formed, shortest form, no surrogates.
  bool utf8() {
    const auto b0 = static_cast<unsigned char>(s_[i_]);
    std::size_t len = 0;
    unsigned min = 0, cp = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      len = 2, min = 0x80, cp = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      len = 3, min = 0x800, cp = b0 & 0x0F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      len = 4, min = 0x10000, cp = b0 & 0x07;
    } else {
      return false;
    }
    if (i_ + len > s_.size()) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s_[i_ + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i_ += len;
    return true;
  }

  bool string(bool& escaped) {
    ++i_;  // opening quote
    while (i_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        escaped = true;
        if (++i_ >= s_.size()) return false;
        const char e = s_[i_++];
        if (e == 'u') {
          unsigned cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate needs its low half
            unsigned low = 0;
            if (!(at('\\') && i_ + 1 < s_.size() && s_[i_ + 1] == 'u')) return false;
            i_ += 2;
            if (!hex4(low) || low < 0xDC00 || low > 0xDFFF) return false;
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return false;
          }
        } else if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' &&
                   e != 't') {
          return false;
        }
        continue;
      }
      if (c >= 0x80) {
        if (!utf8()) return false;
        continue;
      }
      ++i_;
    }
    return false;
  }

  bool digits() {
    const auto start = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    return i_ > start;
  }

  bool number() {
    if (at('-')) ++i_;
    if (at('0')) {
      ++i_;
    } else if (!digits()) {
      return false;
    }
    if (at('.')) {
      ++i_;
      if (!digits()) return false;
    }
    if (at('e') || at('E')) {
      ++i_;
      if (at('+') || at('-')) ++i_;
      if (!digits()) return false;
    }
    return true;
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

}  // namespace

std::string json_object_text::decoded_key(const json_member& m) const {
  if (!m.key_escaped) return std::string(key(m));
  const auto parsed = nlohmann::json::parse("\"" + std::string(key(m)) + "\"", nullptr, false);
  return parsed.is_string() ? parsed.get<std::string>() : std::string(key(m));
}

bool parse_json_object(std::string text, json_object_text& out) {
  out.members.clear();
  if (text.size() > UINT32_MAX) return false;
  if (!scanner(text).object_top(out.members)) {
    out.members.clear();
    return false;
  }
  out.text = std::move(text);
  return true;
}

json_object_text json_object_from(const nlohmann::json& object) {
  json_object_text out;
  parse_json_object(object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), out);
  return out;
}

}  // namespace gateway
