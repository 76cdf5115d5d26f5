#include "gateway/codec/json_object.hpp"

#include "gateway/codec/char_class.hpp"
#include "gateway/codec/json_text.hpp"

#include <boost/url/grammar/hexdig_chars.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace gateway {
namespace {

constexpr int max_depth = 64;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

class scanner {
 public:
  // `text` is scanned up to its size; its terminating NUL stops every loop.
  explicit scanner(const std::string& text)
      : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()) {}

  bool object_top(json_members& members) {
    skip_ws();
    if (!object(1, &members)) return false;
    skip_ws();
    return p_ == end_;
  }

 private:
  bool at(char c) const { return *p_ == c; }  // never past end_, where the NUL matches no c used here
  // The byte classes (char_class::json_space, json_plain) hold no NUL, so every scan stops at the terminator
  // std::string keeps after its text: the loops need no bound of their own, and reaching the end is
  // noticed where a character was due.
  void skip_ws() {
    const char* p = p_;
    while (char_class::json_space(*p)) ++p;
    p_ = p;
  }
  std::uint32_t pos() const { return static_cast<std::uint32_t>(p_ - begin_); }

  [[gnu::always_inline]] bool value(int depth) {
    if (p_ == end_) return false;
    switch (*p_) {
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
    if (static_cast<std::size_t>(end_ - p_) < word.size() || std::memcmp(p_, word.data(), word.size()) != 0)
      return false;
    p_ += word.size();
    return true;
  }

  bool object(int depth, json_members* members) {
    if (depth > max_depth || !at('{')) return false;
    ++p_;
    skip_ws();
    if (at('}')) {
      ++p_;
      return true;
    }
    for (;;) {
      skip_ws();
      json_member m;
      m.key_pos = pos() + 1;
      if (!at('"') || !string(m.key_escaped)) return false;
      m.key_len = pos() - 1 - m.key_pos;
      skip_ws();
      if (!at(':')) return false;
      ++p_;
      skip_ws();
      m.value_pos = pos();
      if (!value(depth)) return false;
      m.value_len = pos() - m.value_pos;
      if (members) members->push_back(m);
      skip_ws();
      if (at(',')) {
        ++p_;
        continue;
      }
      if (at('}')) {
        ++p_;
        return true;
      }
      return false;
    }
  }

  bool array(int depth) {
    if (depth > max_depth) return false;
    ++p_;  // '['
    skip_ws();
    if (at(']')) {
      ++p_;
      return true;
    }
    for (;;) {
      skip_ws();
      if (!value(depth)) return false;
      skip_ws();
      if (at(',')) {
        ++p_;
        continue;
      }
      if (at(']')) {
        ++p_;
        return true;
      }
      return false;
    }
  }

  bool hex4(unsigned& out) {
    if (end_ - p_ < 4) return false;
    out = 0;
    for (int k = 0; k < 4; ++k) {
      const int h = boost::urls::grammar::hexdig_value(p_[k]);
      if (h < 0) return false;
      out = out * 16 + static_cast<unsigned>(h);
    }
    p_ += 4;
    return true;
  }

  // One UTF-8 sequence starting at p_ (first byte >= 0x80): well-formed, shortest form, no surrogates.
  bool utf8() {
    const auto b0 = static_cast<unsigned char>(*p_);
    std::ptrdiff_t len = 0;
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
    if (end_ - p_ < len) return false;
    for (std::ptrdiff_t k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(p_[k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    p_ += len;
    return true;
  }

  // Past the string characters that need no further look: 16 at a time while 16 are left, then by table
  // (the terminating NUL stops it).
  const char* skip_plain(const char* p) const {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    while (end_ - p >= 16) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      // Signed: bytes from 0x80 count as below 0x20, with the controls.
      const __m128i other = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
                                         _mm_cmplt_epi8(x, space));
      const auto mask = static_cast<unsigned>(_mm_movemask_epi8(other));
      if (mask != 0) return p + __builtin_ctz(mask);
      p += 16;
    }
#endif
    while (char_class::json_plain(*p)) ++p;
    return p;
  }

  [[gnu::always_inline]] bool string(bool& escaped) {
    ++p_;  // opening quote
    for (;;) {
      const char* p = skip_plain(p_);
      p_ = p;
      const auto c = static_cast<unsigned char>(*p);
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c == '\\') {
        escaped = true;
        if (end_ - p_ < 2) return false;
        const char e = p_[1];
        p_ += 2;
        if (e == 'u') {
          unsigned cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate needs its low half
            unsigned low = 0;
            if (!(end_ - p_ >= 2 && p_[0] == '\\' && p_[1] == 'u')) return false;
            p_ += 2;
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
      return false;  // a control character, or the end of the text
    }
  }

  bool digits() {
    const char* p = p_;
    while (is_digit(*p)) ++p;
    const bool any = p != p_;
    p_ = p;
    return any;
  }

  bool number() {
    if (at('-')) ++p_;
    if (at('0')) {
      ++p_;
    } else if (!digits()) {
      return false;
    }
    if (at('.')) {
      ++p_;
      if (!digits()) return false;
    }
    if (at('e') || at('E')) {
      ++p_;
      if (at('+') || at('-')) ++p_;
      if (!digits()) return false;
    }
    return true;
  }

  const char* begin_;
  const char* p_;
  const char* end_;
};

}  // namespace

std::string json_object_text::decoded_key(const json_member& m) const {
  if (!m.key_escaped) return std::string(key(m));
  // A recorded key passed the scanner, so it decodes; the key as written stays the answer otherwise.
  std::string decoded;
  return append_decoded_json_string(decoded, key(m)) ? decoded : std::string(key(m));
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
