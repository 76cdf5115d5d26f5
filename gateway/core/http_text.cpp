#include "gateway/core/http_text.hpp"

#include <boost/url/encode.hpp>
#include <boost/url/pct_string_view.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

namespace gateway {

std::string_view reason_phrase(unsigned status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 413:
      return "Payload Too Large";
    case 422:
      return "Unprocessable Content";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Unknown";
  }
}

bool percent_decode(std::string_view in, std::string& out, bool plus_is_space) {
  out.clear();
  const auto escaped = boost::urls::make_pct_string_view(in);
  if (!escaped) return false;
  boost::urls::encoding_opts opt;
  opt.space_as_plus = plus_is_space;
  escaped->decode(opt, boost::urls::string_token::assign_to(out));
  return true;
}

void percent_encode(std::string_view in, std::string& out) {
  static constexpr auto kept = boost::urls::unreserved_chars - '.';
  boost::urls::encode(in, kept, {}, boost::urls::string_token::append_to(out));
}

}  // namespace gateway
