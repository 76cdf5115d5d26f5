#pragma once
// A value inside a JSON answer, addressed by a dotted path as a configuration writes it ("seller.id",
// "lines.0.sku"), so that a dependent call can use it in its path, query, headers or body, or iterate an
// array of it. The answer is read where it lies: a scan over its text that skips what is not on the path,
// with no document built. Pure functions; a search allocates only to decode a key with escapes.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gateway {

// A path into a JSON value: steps separated by '.'. A step of digits only addresses an array element by
// index (no leading zeros except "0"), or a member of that name in an object (like a JSON pointer). An empty
// path (no steps) is the value itself.
struct json_path {
  std::vector<std::string> steps;

  // nullopt and `error` set when a step is empty, or holds a character outside printable ASCII (0x21-0x7e)
  // or one of '{', '}', '"', '\\' (kept out so that a path never reads as a template's placeholder or a
  // JSON string's end); at most 16 steps of at most 128 bytes each.
  static std::optional<json_path> parse(std::string_view text, std::string& error);
};

enum class json_kind : std::uint8_t { missing, null, boolean, number, string, object, array };

// A value found in a document: its kind and its text there (a string with its quotes). A view: valid as
// long as the document's text is.
struct json_value_view {
  json_kind kind = json_kind::missing;
  std::string_view text;
};

// The value at `path` in `doc`. `doc` must be valid JSON (every answer passed parse_json_object in
// gateway/codec/json_object.hpp): the scan trusts its grammar, and on anything it did not expect it reports
// the value missing, without reading outside `doc`. A key given twice in one object counts by its last
// occurrence (as nlohmann keeps the last); keys are compared decoded (escapes such as \u0041 or \/).
json_value_view find_json(std::string_view doc, const json_path& path);

// The scalar as text: a string decoded (escapes resolved, unquoted; UTF-8, a \u surrogate pair combined, a
// lone surrogate as U+FFFD), a number exactly as written, true or false. nullopt for null, an object, an
// array, a missing value.
std::optional<std::string> scalar_text(const json_value_view& value);

// The elements of an array value in order, one per next(); a missing value after the last one, for a value
// that is no array, or on anything unexpected in the text.
class json_elements {
 public:
  explicit json_elements(const json_value_view& array);
  json_value_view next();

 private:
  std::string_view rest_;  // the array's text after the elements read so far
  bool done_ = false;
};

// Calls f(json_value_view element) for each element of an array value, in order, for at most `max`
// elements; returns how many elements the array has (also those beyond `max`). 0 for a value that is no
// array.
template <class F>
std::size_t for_each_element(const json_value_view& array, std::size_t max, F&& f) {
  json_elements elements(array);
  std::size_t count = 0;
  for (auto e = elements.next(); e.kind != json_kind::missing; e = elements.next(), ++count) {
    if (count < max) f(e);
  }
  return count;
}

}  // namespace gateway
