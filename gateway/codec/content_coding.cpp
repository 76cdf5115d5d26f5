#include "gateway/codec/content_coding.hpp"

#include "gateway/codec/http_text.hpp"

#include <algorithm>
#include <optional>

namespace gateway {
namespace {

// RFC 9110 12.4.2 qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ), in thousandths.
std::optional<int> parse_qvalue(std::string_view text) {
  if (text.empty() || (text[0] != '0' && text[0] != '1')) return std::nullopt;
  int value = text[0] == '1' ? 1000 : 0;
  if (text.size() == 1) return value;
  if (text[1] != '.' || text.size() > 5) return std::nullopt;
  int scale = 100;
  for (const char c : text.substr(2)) {
    if (c < '0' || c > '9' || (value == 1000 && c != '0')) return std::nullopt;
    value += (c - '0') * scale;
    scale /= 10;
  }
  return value;
}

// One member of Accept-Encoding: codings [ weight ], weight = OWS ";" OWS "q=" qvalue. Its coding, or
// an empty one when the member is malformed; `q` in thousandths.
std::string_view parse_member(std::string_view member, int& q) {
  q = 1000;
  const auto semicolon = member.find(';');
  const auto coding = trim_ows(member.substr(0, semicolon));
  if (coding.empty() || semicolon == std::string_view::npos) return coding;
  const auto weight = trim_ows(member.substr(semicolon + 1));
  if (weight.size() < 2 || (weight[0] != 'q' && weight[0] != 'Q') || weight[1] != '=') return {};
  const auto value = parse_qvalue(weight.substr(2));
  if (!value) return {};
  q = *value;
  return coding;
}

}  // namespace

std::string_view to_string(content_coding coding) {
  switch (coding) {
    case content_coding::identity:
      return "identity";
    case content_coding::gzip:
      return "gzip";
    case content_coding::deflate:
      return "deflate";
    case content_coding::unknown:
      break;
  }
  return "unknown";
}

content_coding negotiate_coding(std::string_view accept_encoding) {
  // -1: not listed. A coding listed twice keeps its lower weight: a refusal (q=0) is never overridden.
  int gzip = -1, deflate = -1, identity = -1, any = -1;
  auto note = [](int& slot, int q) { slot = slot < 0 ? q : std::min(slot, q); };
  while (!accept_encoding.empty()) {
    const auto comma = accept_encoding.find(',');
    const auto member = accept_encoding.substr(0, comma);
    accept_encoding =
        comma == std::string_view::npos ? std::string_view() : accept_encoding.substr(comma + 1);
    int q = 0;
    const auto coding = parse_member(member, q);
    if (iequals(coding, "gzip") || iequals(coding, "x-gzip")) {
      note(gzip, q);
    } else if (iequals(coding, "deflate")) {
      note(deflate, q);
    } else if (iequals(coding, "identity")) {
      note(identity, q);
    } else if (coding == "*") {
      note(any, q);
    }
  }
  const int gzip_q = gzip >= 0 ? gzip : std::max(any, 0);
  const int deflate_q = deflate >= 0 ? deflate : std::max(any, 0);
  const int best = std::max(gzip_q, deflate_q);
  if (best == 0 || identity > best) return content_coding::identity;
  return gzip_q >= deflate_q ? content_coding::gzip : content_coding::deflate;
}

content_coding parse_content_coding(std::string_view value) {
  value = trim_ows(value);
  if (value.empty() || iequals(value, "identity")) return content_coding::identity;
  if (iequals(value, "gzip") || iequals(value, "x-gzip")) return content_coding::gzip;
  if (iequals(value, "deflate")) return content_coding::deflate;
  return content_coding::unknown;
}

}  // namespace gateway
