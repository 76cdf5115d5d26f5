// libFuzzer target: where a request's credential is read (gateway/codec/credentials.hpp), against reference
// implementations written apart from it: the RFC 6750 credentials grammar as a regular expression, and the
// Cookie field split by a string stream and each pair taken apart by a regular expression.
// Input: a cookie name up to the first '\n', then the field's text (Authorization or Cookie alike).
//
// Invariants: bearer_token gives what the grammar's token group holds, or empty when the grammar refuses;
// the token is a part of the input. cookie_value gives the first pair's value of that name as the reference
// finds it, or empty; it is a part of the input.

#include "gateway/codec/credentials.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <regex>
#include <sstream>
#include <string>

namespace {

std::string reference_bearer(const std::string& text) {
  static const std::regex grammar("[Bb][Ee][Aa][Rr][Ee][Rr] +([A-Za-z0-9._~+/-]+=*)");
  std::smatch m;
  return std::regex_match(text, m, grammar) ? m[1].str() : std::string();
}

std::string reference_cookie(const std::string& text, const std::string& name) {
  if (name.empty()) return {};
  static const std::regex pair("[ \\t]*([^=]*?)[ \\t]*=[ \\t]*(.*?)[ \\t]*");
  std::istringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ';')) {
    std::smatch m;
    if (!std::regex_match(part, m, pair) || m[1].str() != name) continue;
    auto value = m[2].str();
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
      value = value.substr(1, value.size() - 2);
    return value;
  }
  return {};
}

bool inside(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 2048) return 0;  // the references' regular expressions are slow on long texts
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto newline = input.find('\n');
  const auto name = newline == std::string_view::npos ? std::string_view() : input.substr(0, newline);
  const auto field = newline == std::string_view::npos ? input : input.substr(newline + 1);
  // A field value holds no CR, LF or NUL (the HTTP parser refuses them): neither do the inputs here.
  if (field.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos) return 0;
  const std::string text(field);

  const auto token = gateway::bearer_token(field);
  FUZZ_CHECK(inside(token, field));
  FUZZ_CHECK(std::string(token) == reference_bearer(text));

  if (name.find_first_of(std::string_view("=; \t\r\0", 6)) != std::string_view::npos) return 0;
  const auto value = gateway::cookie_value(field, name);
  FUZZ_CHECK(inside(value, field));
  FUZZ_CHECK(std::string(value) == reference_cookie(text, std::string(name)));
  return 0;
}
