#include "gateway/server/request_framing.hpp"

#include "gateway/core/http_text.hpp"

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

}  // namespace gateway
