// libFuzzer target: gateway::parse_json_object against nlohmann::json, differentially.
// The scanner accepts exactly the JSON objects nlohmann accepts, except where it is stricter by design:
// nesting deeper than 64 and invalid UTF-8 are refused. nlohmann in turn skips a leading byte order mark
// and refuses numbers that overflow a double, which the scanner (RFC 8259 grammar) accepts; those
// disagreements are expected too, as is nlohmann's treating a NUL byte as the end of its input (the
// scanner refuses it; the texts are compared up to it). Duplicate keys are allowed by both; the last one
// wins.
// For an accepted object, the recorded members lie inside the text in order, between their quotes, and
// their decoded keys and parsed values equal nlohmann's members. json_object_from() round-trips any
// object nlohmann accepts within the depth limit.

#include "gateway/codec/json_object.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace {

constexpr int max_depth = 64;  // the scanner's limit: containers nested deeper are refused

int depth(const nlohmann::json& j) {
  if (!j.is_structured()) return 0;
  int deepest = 0;
  for (const auto& item : j) deepest = std::max(deepest, depth(item));
  return deepest + 1;
}

struct reference_result {
  std::optional<nlohmann::json> value;  // when nlohmann parsed the text
  bool number_overflow = false;         // refused only for a number beyond a double's range
};

reference_result reference_parse(const std::string& text) {
  reference_result r;
  try {
    r.value = nlohmann::json::parse(text);
  } catch (const nlohmann::json::out_of_range& e) {
    r.number_overflow = e.id == 406;
  } catch (const nlohmann::json::exception&) {
  }
  return r;
}

void check_members(const gateway::json_object_text& ours, const nlohmann::json& theirs) {
  const auto& text = ours.text;
  std::map<std::string, std::string_view> last;  // decoded key -> value text; the last duplicate wins
  std::size_t previous_end = 0;
  for (const auto& m : ours.members) {
    FUZZ_CHECK(m.key_pos >= 1 && m.key_pos >= previous_end);
    FUZZ_CHECK(std::size_t{m.key_pos} + m.key_len < text.size());
    FUZZ_CHECK(text[m.key_pos - 1] == '"' && text[m.key_pos + m.key_len] == '"');
    FUZZ_CHECK(m.value_pos > m.key_pos + m.key_len && m.value_len > 0);
    FUZZ_CHECK(std::size_t{m.value_pos} + m.value_len <= text.size());
    FUZZ_CHECK(m.key_escaped == (ours.key(m).find('\\') != std::string_view::npos));
    previous_end = std::size_t{m.value_pos} + m.value_len;
    last[ours.decoded_key(m)] = ours.value(m);
  }
  FUZZ_CHECK(last.size() == theirs.size());
  for (const auto& [key, value_text] : last) {
    const auto it = theirs.find(key);
    FUZZ_CHECK(it != theirs.end());
    FUZZ_CHECK(nlohmann::json::parse(value_text) == *it);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  gateway::json_object_text ours;
  if (const auto nul = text.find('\0'); nul != std::string::npos) {
    FUZZ_CHECK(!gateway::parse_json_object(text, ours));
    text.resize(nul);
  }
  const bool accepted = gateway::parse_json_object(text, ours);
  const auto theirs = reference_parse(text);
  const bool their_object = theirs.value && theirs.value->is_object();

  if (accepted) {
    FUZZ_CHECK(ours.text == text);
    if (their_object) {
      FUZZ_CHECK(depth(*theirs.value) <= max_depth);
      check_members(ours, *theirs.value);
    } else {
      FUZZ_CHECK(theirs.number_overflow);
    }
  } else {
    FUZZ_CHECK(ours.members.empty());
    if (their_object) {
      const bool explained = depth(*theirs.value) > max_depth || !fuzz::valid_utf8(text) ||
                             std::string_view(text).starts_with("\xEF\xBB\xBF");
      FUZZ_CHECK(explained);
    }
  }

  // An object nlohmann holds prints to a text the scanner accepts, member for member.
  if (their_object && depth(*theirs.value) <= max_depth) {
    const auto printed = gateway::json_object_from(*theirs.value);
    FUZZ_CHECK(!printed.text.empty());
    FUZZ_CHECK(printed.members.size() == theirs.value->size());
  }
  return 0;
}
