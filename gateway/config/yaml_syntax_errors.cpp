#include "gateway/config/yaml_syntax_errors.hpp"

#include <algorithm>
#include <vector>

namespace gateway {

namespace {

struct text_position {
  int line = 0;  // 0-based, as yaml-cpp's marks
  int column = 0;
};

bool before(text_position a, text_position b) {
  return a.line < b.line || (a.line == b.line && a.column < b.column);
}

// What a pass over the text up to a position found: the quoted values that run over several lines, a
// quote or flow collections still open there, and where the last quoted value closed. A simplified
// reading of YAML that knows comments, quotes, flow brackets and block scalars (| and >): enough to name
// what a parser error is about, never to judge a file alone.
struct scan_result {
  struct quoted {
    text_position open;
    text_position close;
  };
  std::vector<quoted> multi_line_quotes;
  std::optional<text_position> open_quote;
  std::vector<std::pair<char, text_position>> open_flows;  // '[' or '{', innermost last
  std::optional<text_position> last_close;                 // the closing quote of the last quoted value
};

int indentation(std::string_view line) {
  const auto first = line.find_first_not_of(' ');
  return static_cast<int>(first == std::string_view::npos ? line.size() : first);
}

bool blank_or_comment(std::string_view line) {
  const auto first = line.find_first_not_of(" \t\r");
  return first == std::string_view::npos || line[first] == '#';
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return lines;
}

// Whether what follows column `c` of `line` is a block scalar's header: '|' or '>' with indicators, then
// nothing but a comment.
bool block_scalar_header(std::string_view line, std::size_t c) {
  std::size_t i = c + 1;
  while (i < line.size() && (line[i] == '-' || line[i] == '+' || (line[i] >= '1' && line[i] <= '9'))) ++i;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
  return i == line.size() || (line[i] == '#' && i > c + 1);
}

scan_result scan(const std::vector<std::string_view>& lines, text_position until) {
  scan_result r;
  enum class state { plain, double_quoted, single_quoted } s = state::plain;
  text_position open;
  int block_parent = -1;  // inside a block scalar: the indentation its lines must exceed
  for (int l = 0; l < static_cast<int>(lines.size()) && l <= until.line; ++l) {
    const std::string_view line = lines[static_cast<std::size_t>(l)];
    if (block_parent >= 0) {
      if (blank_or_comment(line) || indentation(line) > block_parent) continue;
      block_parent = -1;
    }
    char last = 0;  // the last character outside quotes on this line that was not a space
    for (std::size_t c = 0; c < line.size(); ++c) {
      const text_position here{l, static_cast<int>(c)};
      if (!before(here, until)) return r;
      const char ch = line[c];
      if (s == state::double_quoted) {
        if (ch == '\\') {
          ++c;
        } else if (ch == '"') {
          s = state::plain;
          if (here.line != open.line) r.multi_line_quotes.push_back({open, here});
          r.open_quote.reset();
          r.last_close = here;
          last = ch;
        }
        continue;
      }
      if (s == state::single_quoted) {
        if (ch == '\'' && c + 1 < line.size() && line[c + 1] == '\'') {
          ++c;
        } else if (ch == '\'') {
          s = state::plain;
          if (here.line != open.line) r.multi_line_quotes.push_back({open, here});
          r.open_quote.reset();
          r.last_close = here;
          last = ch;
        }
        continue;
      }
      const bool after_space = c == 0 || line[c - 1] == ' ' || line[c - 1] == '\t';
      // Where a value may start: the line's first character, after "key: ", "- " or "? ", or in a flow
      // collection after '[', '{' or ','.
      const bool value_start = last == 0 || last == '[' || last == '{' || last == ',' ||
                               ((last == ':' || last == '-' || last == '?') && after_space);
      if (ch == '#' && after_space) break;
      if ((ch == '"' || ch == '\'') && value_start) {
        s = ch == '"' ? state::double_quoted : state::single_quoted;
        open = here;
        r.open_quote = here;
      } else if ((ch == '[' || ch == '{') && value_start) {
        r.open_flows.emplace_back(ch, here);
      } else if ((ch == ']' || ch == '}') && !r.open_flows.empty()) {
        r.open_flows.pop_back();
      } else if ((ch == '|' || ch == '>') && value_start && last != 0 && block_scalar_header(line, c)) {
        block_parent = indentation(line);
        break;
      }
      if (ch != ' ' && ch != '\t') last = ch;
    }
  }
  return r;
}

std::string at_line(int line) {
  return "at line " + std::to_string(line + 1);
}

std::string opened_at(text_position p) {
  return "opened at line " + std::to_string(p.line + 1) + ", column " + std::to_string(p.column + 1);
}

bool list_item(std::string_view line) {
  const auto first = static_cast<std::size_t>(indentation(line));
  return first < line.size() && line[first] == '-' && (first + 1 == line.size() || line[first + 1] == ' ');
}

// The nearest line above `line` that holds content indented at most `indent`, or -1.
int content_line_above(const std::vector<std::string_view>& lines, int line, int indent) {
  for (int l = line - 1; l >= 0; --l) {
    const auto text = lines[static_cast<std::size_t>(l)];
    if (!blank_or_comment(text) && indentation(text) <= indent) return l;
  }
  return -1;
}

// A line whose indentation the parser could not place: deeper (under a key that has a value already) or
// shallower than the block it is in.
std::string indentation_problem(const std::vector<std::string_view>& lines, int line, bool deeper) {
  const auto text = lines[static_cast<std::size_t>(line)];
  const int indent = indentation(text);
  const std::string spaces = std::to_string(indent) + (indent == 1 ? " space" : " spaces");
  if (deeper) {
    const int above = content_line_above(lines, line, indent - 1);
    return "bad indentation " + at_line(line) + " (a key is indented deeper than its siblings: " + spaces +
           (above >= 0 ? ", under line " + std::to_string(above + 1) + " which has a value already" : "") +
           ")";
  }
  const int above = content_line_above(lines, line, indent);
  const bool above_same = above >= 0 && indentation(lines[static_cast<std::size_t>(above)]) == indent;
  if (list_item(text)) {
    if (above_same)
      return "a list item ('- ') " + at_line(line) + " among the keys of a mapping (line " +
             std::to_string(above + 1) + " is a key at the same indentation)";
    return "bad indentation " + at_line(line) +
           " (a list item is indented shallower than the items above it: " + spaces + ")";
  }
  if (above_same && list_item(lines[static_cast<std::size_t>(above)]))
    return "a key " + at_line(line) + " among the items of a list (line " + std::to_string(above + 1) +
           " is a list item ('- ') at the same indentation)";
  return "bad indentation " + at_line(line) + " (a key is indented shallower than its siblings: " + spaces +
         ", deeper than its parent)";
}

}  // namespace

std::string explain_yaml_error(std::string_view text, const std::string& message, int line, int column) {
  const auto lines = split_lines(text);
  if (line < 0 || line >= static_cast<int>(lines.size())) return message;
  const text_position mark{line, std::max(column, 0)};
  const auto here = scan(lines, mark);
  const std::string_view mark_line = lines[static_cast<std::size_t>(line)];

  // A quote left open runs on over the lines below until some other quote closes it: the error is where
  // the text after that one made no sense.
  if (here.open_quote && here.open_quote->line < line)
    return "unclosed quote " + opened_at(*here.open_quote) + " (the quoted value runs on to here)";
  for (const auto& q : here.multi_line_quotes) {
    if (q.close.line == line)
      return "unclosed quote " + opened_at(q.open) + " (the quoted value runs on to line " +
             std::to_string(q.close.line + 1) + ")";
  }
  const auto indent_end = mark_line.find_first_not_of(" \t");
  if (mark_line.substr(0, indent_end).find('\t') != std::string_view::npos)
    return "a tab in the indentation " + at_line(line) + " (YAML indents with spaces only)";

  if (message == "illegal map value") {
    // A second "key:" on the line: the value holds ": ", which starts a mapping in a plain value.
    const auto colon = mark_line.find(": ");
    if (colon != std::string_view::npos && static_cast<int>(colon) < mark.column)
      return "a value " + at_line(line) + " holds ': ' (quote the value: key: \"a: b\")";
    return indentation_problem(lines, line, true);
  }
  if (message == "end of map not found" || message == "end of sequence not found") {
    if (here.last_close && here.last_close->line == line && here.last_close->column + 1 == mark.column)
      return "text after the closing quote " + at_line(line) + " (quote the whole value)";
    return indentation_problem(lines, line, false);
  }
  if (message == "end of sequence flow not found" || message == "end of map flow not found") {
    const char opener = message == "end of map flow not found" ? '{' : '[';
    const char closer = opener == '{' ? '}' : ']';
    for (auto it = here.open_flows.rbegin(); it != here.open_flows.rend(); ++it) {
      if (it->first == opener)
        return std::string("unclosed '") + opener + "' " + opened_at(it->second) + " (end it with '" +
               closer + "')";
    }
    return std::string("unclosed '") + opener + "' (end it with '" + closer + "')";
  }
  if (message == "illegal flow end")
    return "a ']' or '}' " + at_line(line) + " closes nothing that was opened";
  if (message == "illegal tab when looking for indentation")
    return "a tab in the indentation " + at_line(line) + " (YAML indents with spaces only)";
  if (message == "illegal block entry")
    return "a list item ('- ') " + at_line(line) +
           " where a value was expected (start the list on the next line, indented, or write [a, b])";
  if (message.starts_with("unknown escape character: ")) {
    const std::string escape = message.substr(std::string_view("unknown escape character: ").size());
    return "unknown escape '\\" + escape + "' in a double-quoted value " + at_line(line) +
           " (write '\\\\' for a backslash, or use single quotes, where '\\' is plain)";
  }
  if (message == "bad character found while scanning hex number" || message.starts_with("invalid unicode: "))
    return "bad \\x, \\u or \\U escape in a double-quoted value " + at_line(line) +
           " (hex digits of a Unicode character expected)";
  if (message == "the referenced anchor is not defined")
    return "an alias (*name) " + at_line(line) + " names no anchor (write &name on a value above it)";
  if (message == "unknown token" && static_cast<std::size_t>(mark.column) < mark_line.size()) {
    const char first = mark_line[static_cast<std::size_t>(mark.column)];
    if (first == '@' || first == '`' || first == '%')
      return std::string("a value ") + at_line(line) + " starts with '" + first +
             "', which YAML reserves (quote the value)";
    return std::string("unexpected '") + first + "' " + at_line(line);
  }
  return message;
}

std::optional<config_error> quote_open_at_end(std::string_view text) {
  const auto lines = split_lines(text);
  const auto end = scan(lines, {static_cast<int>(lines.size()), 0});
  if (!end.open_quote) return std::nullopt;
  return config_error{
      end.open_quote->line + 1, end.open_quote->column + 1,
      "unclosed quote " + opened_at(*end.open_quote) + " (the quoted value runs to the end of the file)"};
}

}  // namespace gateway
