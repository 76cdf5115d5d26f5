// libFuzzer target: gateway::path_template::parse and expand.
// Input: byte 0 is the length of the template text that follows; the rest is a list of values, each a
// length byte and that many bytes, given to the template's parameters in turn.
// Invariants: parsing never crashes; a refusal says why; an accepted template starts with '/', has no
// space or control character in its literal text and prints back to its text; an expansion is the literal
// text with each value in its place written only with A-Z a-z 0-9 - _ ~ and %XX escapes, which decode to
// the value.

#include "gateway/codec/path_template.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace {

bool unreserved(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == '~';
}

int upper_hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Checks that `encoded` is `value` written with unreserved characters and %XX escapes only (and, for a
// catch-all's segments, the '/' between them).
void check_encoding(std::string_view encoded, std::string_view value, bool segments) {
  std::string decoded;
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    if (unreserved(encoded[i]) || (segments && encoded[i] == '/')) {
      decoded += encoded[i];
      continue;
    }
    FUZZ_CHECK(encoded[i] == '%' && i + 2 < encoded.size());
    const int hi = upper_hex(encoded[i + 1]);
    const int lo = upper_hex(encoded[i + 2]);
    FUZZ_CHECK(hi >= 0 && lo >= 0);
    const auto c = static_cast<char>(hi * 16 + lo);
    FUZZ_CHECK(!unreserved(c));  // what may pass through unescaped does
    decoded += c;
    i += 2;
  }
  FUZZ_CHECK(decoded == value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::input in(data, size);
  const auto text = in.take(in.byte());
  std::vector<std::string_view> values;
  while (!in.empty()) values.push_back(in.take(in.byte()));

  std::string error;
  const auto t = gateway::path_template::parse(text, error);
  if (!t) {
    FUZZ_CHECK(!error.empty());
    return 0;
  }
  FUZZ_CHECK(text.starts_with('/'));
  std::string printed;
  bool previous_literal = false;
  for (const auto& piece : t->pieces()) {
    FUZZ_CHECK(!piece.text.empty());
    FUZZ_CHECK(piece.is_param || !previous_literal);  // adjacent literal text is one piece
    FUZZ_CHECK(piece.text.find_first_of("{}") == std::string::npos);
    // Known: parameter names are not checked for spaces and control characters
    // (crashes/path_template-control-in-name); they never reach the expansion.
    if (!piece.is_param) {
      for (const char c : piece.text) FUZZ_CHECK(static_cast<unsigned char>(c) > 0x20 && c != 0x7f);
    }
    printed += piece.is_param ? "{" + piece.text + (piece.segments ? "*}" : "}") : piece.text;  // {rest*}
    previous_literal = !piece.is_param;
  }
  FUZZ_CHECK(printed == text);

  // The n-th parameter lookup gets the n-th value (cycling; empty when there are none).
  std::size_t asked = 0;
  std::vector<std::string_view> given;
  std::string out;
  t->expand(out, [&](const std::string&) -> std::string_view {
    const auto v = values.empty() ? std::string_view() : values[asked % values.size()];
    ++asked;
    given.push_back(v);
    return v;
  });

  // Walk the expansion piece by piece: literal text verbatim, each value encoded.
  std::string_view rest = out;
  std::size_t param = 0;
  const auto& pieces = t->pieces();
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    if (!pieces[i].is_param) {
      FUZZ_CHECK(rest.starts_with(pieces[i].text));
      rest.remove_prefix(pieces[i].text.size());
      continue;
    }
    FUZZ_CHECK(param < given.size());
    // Two parameters may follow each other without literal text between them: the encoded length comes
    // from the value (one byte per unreserved character, three per escape), not from the next literal.
    std::size_t len = 0;
    const bool segments = pieces[i].segments;  // {rest*}: each segment encoded, joined by '/'
    for (const char c : given[param]) len += unreserved(c) || (segments && c == '/') ? 1 : 3;
    FUZZ_CHECK(len <= rest.size());
    check_encoding(rest.substr(0, len), given[param], segments);
    rest.remove_prefix(len);
    ++param;
  }
  FUZZ_CHECK(rest.empty());
  FUZZ_CHECK(param == given.size());
  return 0;
}
