#include "gateway/server/request_framing.hpp"

#include "gateway/codec/char_class.hpp"
#include "gateway/codec/http_text.hpp"
#include "gateway/codec/request_target.hpp"

#include <cstddef>
#include <string>

namespace gateway {

unsigned transfer_coding_status(bool present, std::string_view codings) {
  if (!present) return 0;
  bool chunked_seen = false;
  bool other_seen = false;
  bool last_chunked = false;
  while (true) {
    const auto comma = codings.find(',');
    // A coding may carry parameters ("gzip;q=1" is not valid here, but "x;a=b" is a coding with one).
    const auto element = trim_ows(codings.substr(0, comma));
    const auto name = trim_ows(element.substr(0, element.find(';')));
    if (name.empty()) return 400;  // an empty list element where a coding must be
    last_chunked = iequals(name, "chunked");
    if (last_chunked) {
      if (chunked_seen) return 400;  // chunked applied twice
      chunked_seen = true;
    } else {
      other_seen = true;
    }
    if (comma == std::string_view::npos) break;
    codings.remove_prefix(comma + 1);
  }
  if (!last_chunked) return 400;
  return other_seen ? 501 : 0;
}

unsigned transfer_coding_status(const boost::beast::http::fields& fields) {
  bool present = false;
  std::string list;
  for (auto [it, end] = fields.equal_range(boost::beast::http::field::transfer_encoding); it != end; ++it) {
    if (present) list += ", ";
    present = true;
    list.append(it->value().data(), it->value().size());
  }
  return transfer_coding_status(present, list);
}

namespace {

namespace http = boost::beast::http;

std::string_view view(boost::beast::string_view s) {
  return {s.data(), s.size()};
}

// A name a lenient server could take for one of the fields that frame or route a request: the same
// letters and digits, whatever the case and whatever else stands between them.
bool framing_lookalike(std::string_view name) {
  static constexpr std::string_view squashed[] = {"contentlength", "transferencoding", "host", "connection"};
  char buffer[32];
  std::size_t n = 0;
  for (const char c : name) {
    const auto u = static_cast<unsigned char>(c);
    const bool letter = (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z');
    if (!letter && !(u >= '0' && u <= '9')) continue;
    if (n == sizeof buffer) return false;
    buffer[n++] = static_cast<char>(letter ? (u | 0x20) : u);
  }
  const std::string_view letters(buffer, n);
  for (const auto s : squashed) {
    if (letters == s) return true;
  }
  return false;
}

// A Host value: a host name, an IPv4 address or a bracketed IPv6 one, and an optional port (RFC 9110
// 7.2); no list, no userinfo, no path. Empty is allowed (RFC 9112 3.2, a target without authority).
constexpr char_class::chars digits = "0123456789";
constexpr char_class::chars host_chars =
    char_class::chars(boost::urls::grammar::alnum_chars) + "-._~!$&'()*+;=%:[]";

}  // namespace

std::string_view field_refusal(const http::request_header<>& head) {
  std::size_t hosts = 0;
  std::size_t lengths = 0;
  std::size_t authorizations = 0;
  std::size_t proxy_authorizations = 0;
  for (const auto& field : head) {
    switch (field.name()) {
      case http::field::host:
        ++hosts;
        if (!char_class::all_of(view(field.value()), host_chars)) return "invalid Host field";
        break;
      case http::field::content_length:
        ++lengths;
        if (!char_class::all_of(view(field.value()), digits)) return "Content-Length is not one number";
        break;
      case http::field::authorization:
        ++authorizations;
        break;
      case http::field::proxy_authorization:
        ++proxy_authorizations;
        break;
      case http::field::unknown:
        if (framing_lookalike(view(field.name_string()))) return "field name resembles a framing field";
        break;
      default:
        break;
    }
  }
  if (lengths > 1) return "Content-Length repeated";
  if (hosts > 1) return "Host repeated";
  if (hosts == 0 && head.version() >= 11) return "Host missing";
  if (authorizations > 1 || proxy_authorizations > 1) return "credentials repeated";
  return {};
}

std::string_view admit_head(http::request_header<>& head) {
  if (auto why = field_refusal(head); !why.empty()) return why;
  auto canonical = normalize_target(view(head.target()));
  if (!canonical.ok) return canonical.error;
  if (!canonical.rewritten) return {};
  head.target(canonical.target);
  if (!canonical.authority.empty()) {
    if (!char_class::all_of(canonical.authority, host_chars)) return "invalid authority in request target";
    head.set(http::field::host, canonical.authority);
  }
  return {};
}

}  // namespace gateway
