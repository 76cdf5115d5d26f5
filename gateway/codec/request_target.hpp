#pragma once
// The one rule by which every request-target is made canonical before a route is matched, a parameter
// is taken from it or a pass-through route rewrites it (RFC 3986 6.2.2 and 5.2.4, RFC 9112 3.2). Pure.
//
// - origin form ("/path?query") is the canonical form. The absolute form ("http://host/path?query")
//   becomes its path and query, and its authority replaces the Host field (RFC 9112 3.2.2); any other
//   scheme, an authority with userinfo, and the authority form are refused. The asterisk form ("*") is
//   left as it is (it matches no route).
// - in the path: percent-encoded unreserved characters (A-Z a-z 0-9 - . _ ~) are decoded, every other
//   escape is written with uppercase hex digits, bytes outside ASCII are percent-encoded; then the dot
//   segments ("." and "..") are removed. ".." above the root stays at the root.
// - refused (the request gets 400): a fragment ('#'), a backslash ('\' or %5C), an encoded '/' (%2F), an
//   encoded NUL, a malformed escape, a path that starts with "//" (before or after the dot segments are
//   removed: URL parsers read it as an authority), and a segment a server could still read as a dot segment
//   after this: one with parameters ("..;x", ".;x") or one that decodes to "." or ".." more than once
//   ("%252e%252e").
// The query is kept as sent (a '#' in it is refused too).
//
// Cost: one scan of the target; a target that is canonical already (almost all) is neither copied nor
// allocated.

#include <string>
#include <string_view>

namespace gateway {

struct target_check {
  // False: refused, `error` says why (for the client's 400).
  bool ok = true;
  std::string_view error;
  // Whether `target` (the canonical request-target) differs from what was sent; when false it is empty.
  bool rewritten = false;
  std::string target;
  // The absolute form's authority ("host:port"), to replace the Host field; empty for the origin form.
  std::string authority;
};

target_check normalize_target(std::string_view target);

// Whether `segment` (one path segment, still encoded) is a dot segment in any encoding a server might
// decode it with: "." or "..", also with parameters after ';', and after percent-decoding it once or
// more. The property every forwarded path keeps (tests and the fuzz target check it too).
bool dot_segment_in_any_encoding(std::string_view segment);

}  // namespace gateway
