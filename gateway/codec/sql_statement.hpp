#pragma once
// Turns a query written with named placeholders (":sku") into the driver's positional form ("$1" for
// PostgreSQL, "?1" for SQLite) and lists the names in position order. A name used twice gets one
// position. Quoted strings, quoted identifiers, dollar-quoted bodies, comments and "::" casts are left
// alone. Pure function.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gateway {

enum class placeholder_style { dollar, question };

struct sql_statement {
  std::string text;                // with positional placeholders
  std::vector<std::string> names;  // names[i] is placeholder i + 1
};

// Returns nullopt and sets `problem` for an unterminated quote or comment, or a positional placeholder
// written by hand ($1, ?): parameters are named, so that nothing is ever spliced into the text.
std::optional<sql_statement> parse_sql_statement(std::string_view query, placeholder_style style,
                                                 std::string& problem);

}  // namespace gateway
