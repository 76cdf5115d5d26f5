#pragma once
// Checks of a parsed request's framing that Beast's parser leaves to its user. Pure functions; included
// by the session and the request-head fuzz target only (it brings in Beast's fields).

#include <boost/beast/http/fields.hpp>

#include <string_view>

namespace gateway {

// The answer owed to a request by its Transfer-Encoding fields (`present`: there is at least one;
// `codings`: their values joined by ", "), per RFC 9112 6.1 and 6.3: 0 when the framing is usable (no
// field, or chunked alone); 400 when the final coding is not chunked (the body length cannot be determined)
// or chunked appears twice or the list is empty or malformed; 501 when chunked is final but another coding
// (which the gateway does not decode) precedes it. Either error closes the connection: bytes after the head
// must never be read as another request.
unsigned transfer_coding_status(bool present, std::string_view codings);

// transfer_coding_status() of a parsed request's fields (every Transfer-Encoding field, joined as one list).
unsigned transfer_coding_status(const boost::beast::http::fields& fields);

}  // namespace gateway
