// libFuzzer target: the values dependent calls take from an answer. gateway::find_json, scalar_text and
// for_each_element against nlohmann::json, differentially; and a value put into a path template and a body
// template.
// Input: a path up to the first '\n', then a JSON text up to the first NUL, then a value to put into the
// templates (without a NUL, the JSON text serves as the value too).
//
// Invariants: whatever the text, the scan reads nothing outside it. When json_path::parse accepts the path
// and parse_json_object the JSON text, the value found is the one nlohmann's document holds at that path
// (members by name, the last of a repeated key; array elements by an index without leading zeros): the same
// kind, its text inside the document and parsing to the same value, a string's scalar text equal to
// nlohmann's string, a number's text parsing to nlohmann's number, an array's elements the same in number
// and order. nlohmann refuses a number beyond a double's range, which the grammar (and parse_json_object)
// allows: such a text has no reference, and is only searched. Any other refusal by nlohmann of a text
// parse_json_object accepted is a finding (both are strict: invalid UTF-8 is refused by both).
//
// A value (the input's, and a found string's text) in "/a/{v}?q={v}" adds no '/', '?' or '#', no space or
// control character, and decodes back to itself; in {"k":"{v}","n":1} it stays member k's string, equal to
// the value when that is UTF-8, with the other member unchanged, read back alike by nlohmann and by
// find_json.

#include "gateway/codec/body_template.hpp"
#include "gateway/codec/json_object.hpp"
#include "gateway/codec/json_path.hpp"
#include "gateway/codec/path_template.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>
#include <string_view>

namespace {

using gateway::json_kind;

json_kind kind_of(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return json_kind::null;
    case nlohmann::json::value_t::boolean:
      return json_kind::boolean;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return json_kind::number;
    case nlohmann::json::value_t::string:
      return json_kind::string;
    case nlohmann::json::value_t::object:
      return json_kind::object;
    case nlohmann::json::value_t::array:
      return json_kind::array;
    default:
      return json_kind::missing;
  }
}

// The reference walk: a member by name (nlohmann keeps a repeated key's last value), an element by an index
// written as a JSON pointer writes it.
const nlohmann::json* reference_find(const nlohmann::json& doc, const gateway::json_path& path) {
  const nlohmann::json* at = &doc;
  for (const auto& step : path.steps) {
    if (at->is_object()) {
      const auto it = at->find(step);
      if (it == at->end()) return nullptr;
      at = &*it;
      continue;
    }
    const bool index = !step.empty() &&
                       std::all_of(step.begin(), step.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                       (step.size() == 1 || step[0] != '0');
    std::size_t i = 0;
    if (!at->is_array() || !index) return nullptr;
    const auto [end, ec] = std::from_chars(step.data(), step.data() + step.size(), i);
    if (ec != std::errc() || i >= at->size()) return nullptr;
    at = &(*at)[i];
  }
  return at;
}

// Whether `part` lies within `whole`.
bool inside(std::string_view part, std::string_view whole) {
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

// A value found in `doc` is the reference's value there.
void check_value(const gateway::json_value_view& ours, const nlohmann::json& theirs, std::string_view doc) {
  FUZZ_CHECK(ours.kind == kind_of(theirs));
  FUZZ_CHECK(inside(ours.text, doc));
  FUZZ_CHECK(nlohmann::json::parse(ours.text).dump() == theirs.dump());
  const auto text = gateway::scalar_text(ours);
  switch (ours.kind) {
    case json_kind::string:
      FUZZ_CHECK(text && *text == theirs.get<std::string>());
      break;
    case json_kind::number:
      FUZZ_CHECK(text && *text == ours.text);
      FUZZ_CHECK(nlohmann::json::parse(*text).dump() == theirs.dump());
      break;
    case json_kind::boolean:
      FUZZ_CHECK(text && *text == (theirs.get<bool>() ? "true" : "false"));
      break;
    default:
      FUZZ_CHECK(!text);
  }
}

// The elements of a found value, at most `max` of them, against the reference's.
void check_elements(const gateway::json_value_view& ours, const nlohmann::json* theirs, std::size_t max,
                    std::string_view doc) {
  std::size_t seen = 0;
  const auto count = gateway::for_each_element(ours, max, [&](gateway::json_value_view element) {
    FUZZ_CHECK(seen < max);
    FUZZ_CHECK(theirs && theirs->is_array() && seen < theirs->size());
    check_value(element, (*theirs)[seen], doc);
    ++seen;
  });
  const std::size_t expected = theirs && theirs->is_array() ? theirs->size() : 0;
  FUZZ_CHECK(count == expected);
  FUZZ_CHECK(seen == std::min(max, expected));
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// `encoded` with its %XX escapes decoded; nullopt for a '%' without two hex digits.
std::optional<std::string> percent_decoded(std::string_view encoded) {
  std::string out;
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    if (encoded[i] != '%') {
      out += encoded[i];
      continue;
    }
    if (encoded.size() - i < 3 || hex_value(encoded[i + 1]) < 0 || hex_value(encoded[i + 2]) < 0)
      return std::nullopt;
    out += static_cast<char>(hex_value(encoded[i + 1]) * 16 + hex_value(encoded[i + 2]));
    i += 2;
  }
  return out;
}

void check_in_path(std::string_view value) {
  static const auto t = [] {
    std::string error;
    return *gateway::path_template::parse("/a/{v}?q={v}", error);
  }();
  std::string out;
  t.expand(out, [&](const std::string&) { return value; });
  FUZZ_CHECK(std::count(out.begin(), out.end(), '/') == 2);
  FUZZ_CHECK(std::count(out.begin(), out.end(), '?') == 1);
  FUZZ_CHECK(out.find('#') == std::string::npos);
  FUZZ_CHECK(std::all_of(out.begin(), out.end(), [](char c) { return c > 0x20 && c < 0x7f; }));
  FUZZ_CHECK(out.starts_with("/a/"));
  const auto query = out.find("?q=");
  FUZZ_CHECK(query != std::string::npos);
  FUZZ_CHECK(percent_decoded(std::string_view(out).substr(3, query - 3)) == value);
  FUZZ_CHECK(percent_decoded(std::string_view(out).substr(query + 3)) == value);
}

void check_in_body(std::string_view value) {
  static const auto t = [] {
    std::string error;
    return *gateway::body_template::parse(R"({"k":"{v}","n":1})", error);
  }();
  std::string out;
  t.expand(out, [&](const std::string&) { return value; });
  const auto body = nlohmann::json::parse(out, nullptr, false);
  FUZZ_CHECK(body.is_object() && body.size() == 2);
  FUZZ_CHECK(body.contains("k") && body["k"].is_string());
  FUZZ_CHECK(body.contains("n") && body["n"] == 1);
  // Invalid UTF-8 is replaced (U+FFFD) on the way in: only a UTF-8 value can come back as it was.
  if (fuzz::valid_utf8(value)) FUZZ_CHECK(body["k"].get<std::string>() == value);
  gateway::json_object_text validated;
  FUZZ_CHECK(gateway::parse_json_object(out, validated));
  std::string error;
  FUZZ_CHECK(gateway::scalar_text(gateway::find_json(out, *gateway::json_path::parse("k", error))) ==
             body["k"].get<std::string>());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto newline = input.find('\n');
  const auto path_text = input.substr(0, newline);
  const auto rest = newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);
  const auto nul = rest.find('\0');
  const std::string doc(rest.substr(0, nul));  // its own allocation: a read past it is out of bounds
  const auto value = nul == std::string_view::npos ? rest : rest.substr(nul + 1);

  check_in_path(value);
  check_in_body(value);

  std::string error;
  const auto path = gateway::json_path::parse(path_text, error);
  FUZZ_CHECK(path || !error.empty());
  // Valid JSON or not, the scan reads only inside the text (ASan checks) and what it finds lies within it.
  const auto found = path ? gateway::find_json(doc, *path) : gateway::json_value_view{};
  FUZZ_CHECK(found.kind == json_kind::missing || inside(found.text, doc));
  gateway::for_each_element({json_kind::array, doc}, 4, [&](gateway::json_value_view element) {
    FUZZ_CHECK(element.kind != json_kind::missing && inside(element.text, doc));
  });
  (void)gateway::scalar_text({json_kind::string, doc});

  gateway::json_object_text validated;
  if (!path || !gateway::parse_json_object(doc, validated)) return 0;
  std::optional<nlohmann::json> reference;
  try {
    reference = nlohmann::json::parse(doc);
  } catch (const nlohmann::json::out_of_range& e) {
    FUZZ_CHECK(e.id == 406);  // a number beyond a double's range
  }  // any other exception leaves the target, and libFuzzer reports it with its message
  if (reference) {
    const auto* theirs = reference_find(*reference, *path);
    FUZZ_CHECK((found.kind == json_kind::missing) == (theirs == nullptr));
    if (theirs) check_value(found, *theirs, doc);
    check_elements(found, theirs, path_text.size() % 5, doc);
  }
  if (const auto text = gateway::scalar_text(found); text && found.kind == json_kind::string) {
    check_in_path(*text);
    check_in_body(*text);
  }
  return 0;
}
