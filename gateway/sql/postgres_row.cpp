#include "gateway/sql/postgres_row.hpp"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace gateway {

namespace {

// PostgreSQL type OIDs (pg_type.dat) that map to JSON numbers, booleans or documents.
enum : Oid {
  oid_bool = 16,
  oid_int8 = 20,
  oid_int2 = 21,
  oid_int4 = 23,
  oid_oid = 26,
  oid_json = 114,
  oid_float4 = 700,
  oid_float8 = 701,
  oid_numeric = 1700,
  oid_jsonb = 3802,
};

// A JSON column nests at most this deep: parse_json_object accepts 64 levels, and the row's own object is
// the first of them.
constexpr int max_value_depth = 63;

// Whether the JSON text nests arrays and objects at most `limit` deep. A flat scan that counts brackets
// outside strings (the syntax is checked later): it runs before anything that recurses once per level of
// the document, such as printing it, on the call's small coroutine stack.
bool nesting_within(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

template <class T>
bool parse_number(std::string_view text, T& out) {
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end;
}

}  // namespace

const char* postgres_row_to_json(const PGresult* res, int row, std::size_t limit, nlohmann::json& out) {
  out = nlohmann::json::object();
  std::size_t bytes = 0;
  const int columns = PQnfields(res);
  for (int col = 0; col < columns; ++col) {
    auto& value = out[PQfname(res, col)];
    if (PQgetisnull(res, row, col)) {
      value = nullptr;
      continue;
    }
    const std::string_view text(PQgetvalue(res, row, col),
                                static_cast<std::size_t>(PQgetlength(res, row, col)));
    bytes += text.size();
    if (bytes > limit) return "row too large";
    switch (PQftype(res, col)) {
      case oid_bool:
        value = text == "t";
        continue;
      case oid_int2:
      case oid_int4:
      case oid_int8:
      case oid_oid: {
        std::int64_t n = 0;
        if (parse_number(text, n)) {
          value = n;
          continue;
        }
        break;
      }
      case oid_numeric: {
        std::int64_t n = 0;
        double d = 0;
        if (parse_number(text, n)) {
          value = n;
          continue;
        }
        if (parse_number(text, d)) {
          value = d;
          continue;
        }
        break;  // NaN, Infinity, or beyond double: keep the exact text
      }
      case oid_float4:
      case oid_float8: {
        double d = 0;
        if (text.find_first_not_of("0123456789.eE+-") == std::string_view::npos && parse_number(text, d)) {
          value = d;
          continue;
        }
        break;
      }
      case oid_json:
      case oid_jsonb: {
        if (!nesting_within(text, max_value_depth)) return "value nested too deep";
        auto parsed = nlohmann::json::parse(text, nullptr, false);
        if (!parsed.is_discarded()) {
          value = std::move(parsed);
          continue;
        }
        break;
      }
      default:
        break;
    }
    value = std::string(text);
  }
  return nullptr;
}

}  // namespace gateway
