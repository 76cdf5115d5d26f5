// yaml-cpp's syntax errors told as what the writer did, at yaml-cpp's line and column, from real malformed
// configurations through the loader.

#include "gateway/config/config_loader.hpp"

#include <catch2/catch.hpp>

using namespace gateway;

namespace {

// The single error of loading `yaml`.
config_error syntax_error(const std::string& yaml) {
  const auto r = load_config_text(yaml, "t.yaml");
  CHECK_FALSE(r.config.has_value());
  REQUIRE(r.errors.size() == 1);
  INFO(r.errors[0].message);
  return r.errors[0];
}

void check_error(const std::string& yaml, int line, int column, const std::string& message) {
  INFO("config:\n" << yaml);
  const auto e = syntax_error(yaml);
  CHECK(e.message == message);
  CHECK(e.line == line);
  CHECK(e.column == column);
}

}  // namespace

TEST_CASE("yaml syntax: a key indented deeper than its siblings under a key with a value", "[config][yaml]") {
  check_error(
      "server:\n  listen: 127.0.0.1:0\n   threads: 2\n", 3, 11,
      "bad indentation at line 3 (a key is indented deeper than its siblings: 3 spaces, under line 2 which "
      "has a value already)");
}

TEST_CASE("yaml syntax: a key indented shallower than its siblings", "[config][yaml]") {
  check_error(
      "server:\n  listen: 127.0.0.1:0\n threads: 2\n", 3, 2,
      "bad indentation at line 3 (a key is indented shallower than its siblings: 1 space, deeper than its "
      "parent)");
}

TEST_CASE("yaml syntax: a key of a list entry indented shallower than the entry's first key",
          "[config][yaml]") {
  check_error(
      "routes:\n  - path: /x\n    calls:\n      - name: a\n       downstream: b\n", 5, 8,
      "bad indentation at line 5 (a key is indented shallower than its siblings: 7 spaces, deeper than its "
      "parent)");
}

TEST_CASE("yaml syntax: a list item among the keys of a mapping", "[config][yaml]") {
  check_error(
      "server:\n  listen: 127.0.0.1:0\n  - threads\n", 3, 3,
      "a list item ('- ') at line 3 among the keys of a mapping (line 2 is a key at the same indentation)");
}

TEST_CASE("yaml syntax: a key among the items of a list", "[config][yaml]") {
  check_error(
      "server:\n  trusted_proxies:\n    - 10.0.0.0/8\n    threads: 2\n", 4, 5,
      "a key at line 4 among the items of a list (line 3 is a list item ('- ') at the same indentation)");
}

TEST_CASE("yaml syntax: a list item indented shallower than the items above it", "[config][yaml]") {
  check_error(
      "server:\n  trusted_proxies:\n    - 10.0.0.0/8\n   - 10.1.0.0/16\n", 4, 4,
      "bad indentation at line 4 (a list item is indented shallower than the items above it: 3 spaces)");
}

TEST_CASE("yaml syntax: a tab in the indentation", "[config][yaml]") {
  check_error("server:\n\tthreads: 2\n", 2, 9,
              "a tab in the indentation at line 2 (YAML indents with spaces only)");
  check_error("server:\n  listen: 127.0.0.1:0\n\tthreads: 2\n", 3, 1,
              "a tab in the indentation at line 3 (YAML indents with spaces only)");
}

TEST_CASE("yaml syntax: a plain value holding a colon and a space", "[config][yaml]") {
  check_error("log:\n  level: info: debug\n", 2, 14,
              "a value at line 2 holds ': ' (quote the value: key: \"a: b\")");
}

TEST_CASE("yaml syntax: an unclosed double quote closed by a later quote", "[config][yaml]") {
  check_error("server:\n  listen: \"127.0.0.1:0\n  threads: 2\nlog:\n  level: \"info\"\n", 5, 11,
              "unclosed quote opened at line 2, column 11 (the quoted value runs on to line 5)");
}

TEST_CASE("yaml syntax: an unclosed single quote closed by a later quote", "[config][yaml]") {
  check_error("server:\n  listen: '127.0.0.1:0\n  threads: 2\nlog:\n  level: 'info'\n", 5, 11,
              "unclosed quote opened at line 2, column 11 (the quoted value runs on to line 5)");
}

TEST_CASE("yaml syntax: an unclosed quote that runs to the end of the file", "[config][yaml]") {
  // yaml-cpp takes the end of the text as the closing quote.
  check_error("server:\n  threads: 2\nlog:\n  level: \"info\n  access: true\n", 4, 10,
              "unclosed quote opened at line 4, column 10 (the quoted value runs to the end of the file)");
}

TEST_CASE("yaml syntax: text after a closing quote", "[config][yaml]") {
  check_error("log:\n  level: 'info'rmation\n", 2, 16,
              "text after the closing quote at line 2 (quote the whole value)");
}

TEST_CASE("yaml syntax: an unknown escape in a double-quoted value", "[config][yaml]") {
  check_error(
      "routes:\n  - path: \"/api\\q\"\n", 2, 18,
      "unknown escape '\\q' in a double-quoted value at line 2 (write '\\\\' for a backslash, or use single "
      "quotes, where '\\' is plain)");
}

TEST_CASE("yaml syntax: a bad unicode escape", "[config][yaml]") {
  const auto e = syntax_error("routes:\n  - path: \"/api\\uZZZZ\"\n");
  CHECK(e.line == 2);
  CHECK(e.message ==
        "bad \\x, \\u or \\U escape in a double-quoted value at line 2 (hex digits of a Unicode character "
        "expected)");
}

TEST_CASE("yaml syntax: an unclosed flow list", "[config][yaml]") {
  check_error("server:\n  trusted_proxies: [10.0.0.0/8, 10.1.0.0/16\n  threads: 2\nlog: {}\n", 3, 10,
              "unclosed '[' opened at line 2, column 20 (end it with ']')");
}

TEST_CASE("yaml syntax: an unclosed flow mapping", "[config][yaml]") {
  check_error("routes:\n  - path: /x\n    params:\n      sku: {required: true\n    method: GET\n", 5, 11,
              "unclosed '{' opened at line 4, column 12 (end it with '}')");
}

TEST_CASE("yaml syntax: a closing bracket that closes nothing", "[config][yaml]") {
  check_error("server:\n  trusted_proxies: [10.0.0.0/8]]\n", 2, 32,
              "a ']' or '}' at line 2 closes nothing that was opened");
}

TEST_CASE("yaml syntax: a list item where a value was expected", "[config][yaml]") {
  check_error("server:\n  trusted_proxies: - 10.0.0.0/8\n", 2, 20,
              "a list item ('- ') at line 2 where a value was expected (start the list on the next line, "
              "indented, or "
              "write [a, b])");
}

TEST_CASE("yaml syntax: an alias naming no anchor", "[config][yaml]") {
  check_error("server:\n  threads: *count\n", 2, 12,
              "an alias (*name) at line 2 names no anchor (write &name on a value above it)");
}

TEST_CASE("yaml syntax: a value starting with a character YAML reserves", "[config][yaml]") {
  check_error("log:\n  level: @info\n", 2, 10,
              "a value at line 2 starts with '@', which YAML reserves (quote the value)");
}

TEST_CASE("yaml syntax: quotes inside comments block scalars and plain values are no unclosed quote",
          "[config][yaml]") {
  // Valid YAML whose quotes the explanation must not take for unclosed ones: it then loads, or fails on
  // something else than its syntax.
  const auto r = load_config_text(
      "# the writer's \"notes\n"
      "log:\n"
      "  level: info # don't\n"
      "downstreams:\n"
      "  a:\n"
      "    url: http://127.0.0.1:9\n"
      "routes:\n"
      "  - path: /x\n"
      "    headers:\n"
      "      set:\n"
      "        X-Note: >-\n"
      "          \"it's\n"
      "          tagged\n"
      "    calls:\n"
      "      - name: a\n"
      "        downstream: a\n"
      "        path: /a\n"
      "        fields: [it's, 'quoted']\n",
      "t.yaml");
  INFO((r.errors.empty() ? std::string() : r.errors[0].message));
  CHECK(r.errors.empty());
}
