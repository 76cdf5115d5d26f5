#pragma once
// The character classes text is checked against, in one place: Boost.URL's constexpr lookup tables
// (one bit per byte value), shared by the request path, the parsers and the configuration. Pure.

#include <boost/url/grammar/alnum_chars.hpp>
#include <boost/url/grammar/charset.hpp>
#include <boost/url/grammar/hexdig_chars.hpp>
#include <boost/url/grammar/lut_chars.hpp>

#include <string_view>

namespace gateway::char_class {

using chars = boost::urls::grammar::lut_chars;

// RFC 9110 token characters: field names, methods, transfer codings.
inline constexpr chars tchar = chars(boost::urls::grammar::alnum_chars) + "!#$%&'*+-.^_`|~";
// Field values, reason phrases and chunk extensions (RFC 9110 field-vchar, SP, HTAB and obs-text): every
// byte but the other controls and DEL.
inline constexpr chars field_text = chars([](char c) {
  const auto u = static_cast<unsigned char>(c);
  return u == '\t' || (u >= 0x20 && u != 0x7f);
});
// Hex digits, either case (chunk sizes).
inline constexpr chars hexdig = chars(boost::urls::grammar::hexdig_chars);
// Lowercase hex digits, as W3C trace context writes them.
inline constexpr chars lower_hex = "0123456789abcdef";
// What a client-supplied request id may hold, so that it is safe in headers and logs as it is.
inline constexpr chars request_id = chars(boost::urls::grammar::alnum_chars) + "-_.:";

// JSON's insignificant whitespace (RFC 8259).
inline constexpr chars json_space = " \t\n\r";
// The bytes of a JSON string that need no further look: printable ASCII but '"' and '\\'.
inline constexpr chars json_plain = chars([](char c) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 0x20 && u < 0x80 && c != '"' && c != '\\';
});

// True when every byte of `s` is in `cs` (also for an empty `s`).
inline bool all_of(std::string_view s, const chars& cs) {
  return boost::urls::grammar::find_if_not(s.data(), s.data() + s.size(), cs) == s.data() + s.size();
}

}  // namespace gateway::char_class
