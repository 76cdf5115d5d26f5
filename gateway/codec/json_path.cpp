#include "gateway/codec/json_path.hpp"

#include "gateway/codec/char_class.hpp"
#include "gateway/codec/json_text.hpp"

#include <charconv>
#include <cstring>

namespace gateway {
namespace {

constexpr std::size_t max_steps = 16;
constexpr std::size_t max_step_size = 128;

// Printable ASCII but '.' (between steps) and the characters that would end a placeholder or a JSON string
// around the path.
constexpr char_class::chars step_chars = char_class::chars([](char c) {
  return c >= 0x21 && c <= 0x7e && c != '.' && c != '{' && c != '}' && c != '"' && c != '\\';
});

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Reads values from a text that is JSON by contract: each value is skipped by its first character and its
// end (strings up to the closing quote past escapes, containers by counting brackets), not checked against
// the grammar. Every read is bounded by the text's end, so a text that breaks the contract ends the scan
// with a missing value rather than a read outside it.
class value_scan {
 public:
  explicit value_scan(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  void skip_ws() {
    while (p_ != end_ && char_class::json_space(*p_)) ++p_;
  }
  bool at(char c) const { return p_ != end_ && *p_ == c; }
  bool take(char c) {
    if (!at(c)) return false;
    ++p_;
    return true;
  }
  std::string_view rest() const { return {p_, static_cast<std::size_t>(end_ - p_)}; }

  // The value that starts here, and the scan past it; missing (and the scan anywhere) when there is none.
  json_value_view value() {
    const char* begin = p_;
    const json_kind kind = skip_value();
    if (kind == json_kind::missing) return {};
    return {kind, {begin, static_cast<std::size_t>(p_ - begin)}};
  }

  // Past a string that starts here; `escaped` tells whether it holds a backslash.
  bool skip_string(bool& escaped) {
    ++p_;  // the opening quote
    while (p_ != end_) {
      const char c = *p_;
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c == '\\') {
        escaped = true;
        if (end_ - p_ < 2) return false;
        p_ += 2;  // the escaped character cannot end the string; the rest of a \u escape is hex digits
        continue;
      }
      ++p_;
    }
    return false;
  }

 private:
  json_kind skip_value() {
    if (p_ == end_) return json_kind::missing;
    bool escaped = false;
    switch (*p_) {
      case '{':
        return skip_container() ? json_kind::object : json_kind::missing;
      case '[':
        return skip_container() ? json_kind::array : json_kind::missing;
      case '"':
        return skip_string(escaped) ? json_kind::string : json_kind::missing;
      case 't':
        return skip_literal("true") ? json_kind::boolean : json_kind::missing;
      case 'f':
        return skip_literal("false") ? json_kind::boolean : json_kind::missing;
      case 'n':
        return skip_literal("null") ? json_kind::null : json_kind::missing;
      default:
        return *p_ == '-' || is_digit(*p_) ? skip_number() : json_kind::missing;
    }
  }

  bool skip_literal(std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) < word.size() || std::memcmp(p_, word.data(), word.size()) != 0)
      return false;
    p_ += word.size();
    return true;
  }

  json_kind skip_number() {
    while (p_ != end_ &&
           (is_digit(*p_) || *p_ == '-' || *p_ == '+' || *p_ == '.' || *p_ == 'e' || *p_ == 'E'))
      ++p_;
    return json_kind::number;
  }

  // Past an object or array that starts here, by counting brackets outside strings: no recursion, so no
  // depth limit of its own (the document's was checked when it was validated).
  bool skip_container() {
    std::size_t depth = 0;
    while (p_ != end_) {
      const char c = *p_;
      if (c == '"') {
        bool escaped = false;
        if (!skip_string(escaped)) return false;
        continue;
      }
      ++p_;
      if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return true;
      }
    }
    return false;
  }

  const char* p_;
  const char* end_;
};

// Whether a key as written (between its quotes) is `name`. `scratch` holds a decoded key; it is kept
// across calls so that a document's escaped keys share one buffer.
bool key_is(std::string_view key, bool escaped, std::string_view name, std::string& scratch) {
  if (!escaped) return key == name;
  if (key.size() < name.size()) return false;  // decoding never lengthens a key
  scratch.clear();
  return append_decoded_json_string(scratch, key) && scratch == name;
}

// The last member named `name` of the object at the front of `text`.
json_value_view find_member(std::string_view text, std::string_view name, std::string& scratch) {
  value_scan s(text);
  if (!s.take('{')) return {};
  s.skip_ws();
  if (s.take('}')) return {};
  json_value_view found;
  for (;;) {
    s.skip_ws();
    if (!s.at('"')) return {};
    const char* key_begin = s.rest().data() + 1;
    bool escaped = false;
    if (!s.skip_string(escaped)) return {};
    const std::string_view key(key_begin, static_cast<std::size_t>(s.rest().data() - 1 - key_begin));
    s.skip_ws();
    if (!s.take(':')) return {};
    s.skip_ws();
    const auto value = s.value();
    if (value.kind == json_kind::missing) return {};
    // A later member of the same name replaces this one, so the scan goes on to the object's end.
    if (key_is(key, escaped, name, scratch)) found = value;
    s.skip_ws();
    if (s.take(',')) continue;
    return s.take('}') ? found : json_value_view{};
  }
}

// The array index a step names: digits without a leading zero ("0" itself aside), as in a JSON pointer.
std::optional<std::size_t> array_index(std::string_view step) {
  if (step.empty() || (step.size() > 1 && step[0] == '0')) return std::nullopt;
  std::size_t index = 0;
  const auto [end, ec] = std::from_chars(step.data(), step.data() + step.size(), index);
  if (ec != std::errc() || end != step.data() + step.size()) return std::nullopt;  // a sign, or too large
  return index;
}

// The element at `index` of the array at the front of `text`.
json_value_view find_element(std::string_view text, std::size_t index) {
  value_scan s(text);
  if (!s.take('[')) return {};
  s.skip_ws();
  if (s.at(']')) return {};
  for (std::size_t i = 0;; ++i) {
    s.skip_ws();
    const auto value = s.value();
    if (value.kind == json_kind::missing) return {};
    if (i == index) return value;
    s.skip_ws();
    if (!s.take(',')) return {};
  }
}

}  // namespace

std::optional<json_path> json_path::parse(std::string_view text, std::string& error) {
  json_path path;
  if (text.empty()) return path;
  for (;;) {
    const auto dot = text.find('.');
    const auto step = text.substr(0, dot);
    if (step.empty()) {
      error = "a path step is empty (a '.' at either end of the path, or two in a row)";
      return std::nullopt;
    }
    if (step.size() > max_step_size) {
      error = "a path step is longer than " + std::to_string(max_step_size) + " bytes";
      return std::nullopt;
    }
    if (!char_class::all_of(step, step_chars)) {
      error = R"(a path step may hold printable ASCII but spaces and '{', '}', '"', '\')";
      return std::nullopt;
    }
    if (path.steps.size() == max_steps) {
      error = "a path has more than " + std::to_string(max_steps) + " steps";
      return std::nullopt;
    }
    path.steps.emplace_back(step);
    if (dot == std::string_view::npos) return path;
    text.remove_prefix(dot + 1);
  }
}

json_value_view find_json(std::string_view doc, const json_path& path) {
  value_scan s(doc);
  s.skip_ws();
  if (path.steps.empty()) return s.value();
  // A step looks into the container that starts at `here`; where that container ends is not needed, so
  // the document is not skipped as a whole before its members are read.
  std::string_view here = s.rest();
  std::string scratch;
  json_value_view found;
  for (const auto& step : path.steps) {
    if (here.starts_with('{')) {
      found = find_member(here, step, scratch);
    } else if (const auto index = array_index(step); index && here.starts_with('[')) {
      found = find_element(here, *index);
    } else {
      return {};
    }
    if (found.kind == json_kind::missing) return {};
    here = found.text;
  }
  return found;
}

std::optional<std::string> scalar_text(const json_value_view& value) {
  const auto text = value.text;
  switch (value.kind) {
    case json_kind::string: {
      if (text.size() < 2 || text.front() != '"' || text.back() != '"') return std::nullopt;
      std::string out;
      if (!append_decoded_json_string(out, text.substr(1, text.size() - 2))) return std::nullopt;
      return out;
    }
    case json_kind::number:
      if (text.empty()) return std::nullopt;
      return std::string(text);
    case json_kind::boolean:
      if (text != "true" && text != "false") return std::nullopt;
      return std::string(text);
    default:
      return std::nullopt;
  }
}

json_elements::json_elements(const json_value_view& array) {
  value_scan s(array.text);
  done_ = array.kind != json_kind::array || !s.take('[');
  s.skip_ws();
  done_ = done_ || s.at(']');
  rest_ = s.rest();
}

json_value_view json_elements::next() {
  if (done_) return {};
  value_scan s(rest_);
  s.skip_ws();
  const auto value = s.value();
  s.skip_ws();
  // After an element comes ',' and the next one, or the array's end; anything else ends the elements.
  if (value.kind == json_kind::missing || !(s.take(',') || s.at(']'))) {
    done_ = true;
    return {};
  }
  done_ = s.at(']');
  rest_ = s.rest();
  return value;
}

}  // namespace gateway
