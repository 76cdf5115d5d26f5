#include "gateway/codec/request_target.hpp"

#include <boost/container/small_vector.hpp>

#include <cstdint>

namespace gateway {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool unreserved(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

constexpr char upper_hex[] = "0123456789ABCDEF";

void append_escape(std::string& out, unsigned char c) {
  out += '%';
  out += upper_hex[c >> 4];
  out += upper_hex[c & 15];
}

// Whether the path part of an origin-form target may need work: an escape, a byte outside printable
// ASCII, a backslash, or a segment starting with '.'. Most targets have none.
bool plain_path(std::string_view path) {
  char previous = 0;
  for (const char c : path) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '%' || c == '\\' || u >= 0x7f || u <= 0x20 || (c == '.' && previous == '/')) return false;
    previous = c;
  }
  return true;
}

// Decodes every well-formed escape of `s` once; false when nothing was decoded.
bool decode_once(std::string_view s, std::string& out) {
  out.clear();
  bool any = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
      any = true;
    } else {
      out += s[i];
    }
  }
  return any;
}

bool dot_name(std::string_view s) {
  s = s.substr(0, s.find(';'));
  return s == "." || s == "..";
}

// The path part of a target, canonical (see the header), into `out`; an error message or "".
std::string_view canonical_path(std::string_view path, std::string& out) {
  // Escapes decoded where they stand for unreserved characters, and checked.
  std::string decoded;
  decoded.reserve(path.size());
  for (std::size_t i = 0; i < path.size(); ++i) {
    const auto c = static_cast<unsigned char>(path[i]);
    if (c == '\\') return "backslash in request path";
    if (c <= 0x20 || c == 0x7f) return "control character in request path";
    if (c >= 0x80) {
      append_escape(decoded, c);
      continue;
    }
    if (c != '%') {
      decoded += static_cast<char>(c);
      continue;
    }
    if (i + 2 >= path.size() || hex_value(path[i + 1]) < 0 || hex_value(path[i + 2]) < 0)
      return "malformed percent-encoding in request path";
    const auto v = static_cast<unsigned char>(hex_value(path[i + 1]) * 16 + hex_value(path[i + 2]));
    i += 2;
    if (v == '/' || v == '\\') return "encoded '/' or '\\' in request path";
    if (v == 0) return "encoded NUL in request path";
    if (unreserved(v)) {
      decoded += static_cast<char>(v);
    } else {
      append_escape(decoded, v);
    }
  }
  // Dot segments removed (RFC 3986 5.2.4), segment by segment; the path starts with '/'.
  boost::container::small_vector<std::string_view, 16> kept;
  std::string_view rest = std::string_view(decoded).substr(1);
  for (;;) {
    const auto slash = rest.find('/');
    const auto segment = rest.substr(0, slash);
    const bool last = slash == std::string_view::npos;
    if (segment == "." || segment == "..") {
      if (segment == ".." && !kept.empty()) kept.pop_back();
      if (last) kept.push_back({});  // "/a/.." is "/", "/a/b/." is "/a/b/"
    } else {
      if (dot_segment_in_any_encoding(segment)) return "ambiguous dot segment in request path";
      kept.push_back(segment);
    }
    if (last) break;
    rest.remove_prefix(slash + 1);
  }
  out.clear();
  if (kept.empty()) out += '/';
  for (const auto segment : kept) out.append("/").append(segment);
  if (out.size() >= 2 && out[1] == '/') return "request path starts with '//'";  // "/..//x", "/.//x"
  return {};
}

}  // namespace

bool dot_segment_in_any_encoding(std::string_view segment) {
  if (dot_name(segment)) return true;
  if (segment.find('%') == std::string_view::npos) return false;
  std::string current(segment);
  std::string next;
  for (int round = 0; round < 8 && decode_once(current, next); ++round) {
    if (dot_name(next)) return true;
    current.swap(next);
  }
  return false;
}

target_check normalize_target(std::string_view target) {
  target_check r;
  const auto refuse = [&](std::string_view why) {
    r.ok = false;
    r.error = why;
    r.rewritten = false;
    r.target.clear();
    return r;
  };
  if (target == "*") return r;
  if (target.find('#') != std::string_view::npos) return refuse("fragment in request target");
  std::string_view origin = target;
  if (target.empty() || target.front() != '/') {
    // The absolute form: "http" or "https", "://", an authority without userinfo, then the path.
    const auto scheme_end = target.find("://");
    if (scheme_end == std::string_view::npos) return refuse("request target is not a path");
    const auto scheme = target.substr(0, scheme_end);
    const bool http = scheme.size() == 4 && (scheme[0] | 0x20) == 'h' && (scheme[1] | 0x20) == 't' &&
                      (scheme[2] | 0x20) == 't' && (scheme[3] | 0x20) == 'p';
    const bool https = scheme.size() == 5 && (scheme[4] | 0x20) == 's' && (scheme[0] | 0x20) == 'h' &&
                       (scheme[1] | 0x20) == 't' && (scheme[2] | 0x20) == 't' && (scheme[3] | 0x20) == 'p';
    if (!http && !https) return refuse("request target scheme is not http or https");
    const auto after = target.substr(scheme_end + 3);
    const auto end = after.find_first_of("/?");
    const auto authority = after.substr(0, end);
    if (authority.empty()) return refuse("request target has no authority");
    if (authority.find('@') != std::string_view::npos) return refuse("request target has userinfo");
    for (const char c : authority) {
      const auto u = static_cast<unsigned char>(c);
      if (u <= 0x20 || u >= 0x7f || c == '\\' || c == '%')
        return refuse("invalid authority in request target");
    }
    r.authority = std::string(authority);
    r.rewritten = true;
    origin = end == std::string_view::npos ? std::string_view() : after.substr(end);
  }
  const auto query_at = origin.find('?');
  const auto path = origin.substr(0, query_at);
  const auto query = query_at == std::string_view::npos ? std::string_view() : origin.substr(query_at);
  // A path that starts with "//" reads as an authority to URL parsers that resolve it against a base
  // (WHATWG's `new URL(target, base)`): "//internal/admin" would name host "internal".
  if (path.size() >= 2 && path[0] == '/' && path[1] == '/') return refuse("request path starts with '//'");
  if (!r.rewritten && plain_path(path)) return r;  // canonical already: nothing copied
  if (path.empty()) {
    r.target = "/";
  } else if (auto why = canonical_path(path, r.target); !why.empty()) {
    return refuse(why);
  }
  r.target += query;
  if (!r.rewritten && r.target == target) {
    r.target.clear();  // the slow look found nothing to change (e.g. "/.well-known")
    return r;
  }
  r.rewritten = true;
  return r;
}

}  // namespace gateway
