#pragma once
// A path's own body: JSON whose string values may name parts of each request, filled in per request.
// Parsed once when the body is set; a body without placeholders is sent as written. Pure, no I/O.
//   {path}         the path name ("seller/17")
//   {seg.N}        its N-th '/'-separated segment, from 0 (seg.1 of "seller/17" is "17"); empty past the end
//   {query.KEY}    the first query parameter KEY, percent-decoded ('+' stays); empty when absent
//   {header.NAME}  the first request header field NAME (any case); empty when absent
// A replacement is JSON-escaped inside its string. A string value that is one placeholder with a '#',
// "{#seg.1}", is written as a bare number when the text is a JSON number, else as a string. Braces that
// name none of these, and object keys, are left as written.

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mock {

struct template_request {
  std::string_view path;                      // the path name
  std::string_view query;                     // the whole query, as sent
  std::span<const std::string_view> headers;  // the values of header_names(), in order ("" when absent)
};

class body_template {
 public:
  // Returns nullopt and sets `error` ("is not JSON", "has a bad placeholder '{seg.x}'", ...; meant to
  // follow the body's name) when `json` is not JSON or holds a placeholder that cannot be filled.
  static std::optional<body_template> parse(std::string json, std::string& error);

  const std::string& text() const { return text_; }  // the body as set
  bool verbatim() const { return parts_.empty(); }   // no placeholder: text() is the answer
  // The header fields the placeholders name, lower-case, each once.
  const std::vector<std::string>& header_names() const { return header_names_; }

  void expand(std::string& out, const template_request& req) const;

 private:
  enum class source { path, segment, query, header };
  // The text from the end of the previous part to `literal_end`, then one placeholder.
  struct part {
    std::size_t literal_end = 0;
    std::size_t resume = 0;  // where the text goes on after the placeholder
    source from = source::path;
    std::size_t index = 0;  // the segment, or the header in header_names_
    std::string key;        // the query parameter
    bool number = false;    // "{#...}": bare when a JSON number (the quotes are outside the literals)
  };

  // Reads the placeholder `name` (between the braces) into `p`; false when `name` is none; sets `error`
  // for one that is malformed.
  bool read_placeholder(std::string_view name, part& p, std::string& error);

  std::string text_;
  std::vector<part> parts_;
  std::vector<std::string> header_names_;
};

// Whether `text` is a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
bool is_json_number(std::string_view text);

}  // namespace mock
