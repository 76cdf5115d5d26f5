#pragma once
// A downstream's JSON object kept as text: validated once, strictly (RFC 8259, UTF-8, bounded depth),
// with the position of each top-level member recorded, so that the merge can copy members as they are
// instead of building a document and printing it again. Pure functions.

#include <boost/container/small_vector.hpp>
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gateway {

struct json_member {
  std::uint32_t key_pos = 0, key_len = 0;      // the key's text between its quotes, still escaped
  std::uint32_t value_pos = 0, value_len = 0;  // the value's text
  bool key_escaped = false;                    // the key holds a backslash escape
};

// Most answers have a handful of members: they are kept without an allocation of their own.
using json_members = boost::container::small_vector<json_member, 8>;

struct json_object_text {
  std::string text;  // the whole object, exactly as received
  json_members members;

  // Members are recorded by the scan of this text: their positions lie within it.
  std::string_view key(const json_member& m) const { return {text.data() + m.key_pos, m.key_len}; }
  std::string_view value(const json_member& m) const { return {text.data() + m.value_pos, m.value_len}; }
  // The key with its escapes decoded.
  std::string decoded_key(const json_member& m) const;
};

// Validates `text` as one JSON object (surrounding whitespace allowed) and records its members.
// False for anything else: another JSON type, bad syntax, invalid UTF-8, nesting deeper than 64.
bool parse_json_object(std::string text, json_object_text& out);

// The text form of an object built in memory (e.g. a database row).
json_object_text json_object_from(const nlohmann::json& object);

}  // namespace gateway
