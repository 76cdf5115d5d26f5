#pragma once
// HTTP content codings as text: which coding a client accepts (Accept-Encoding, RFC 9110 12.5.3) and
// what a Content-Encoding field names. Pure; the codings themselves are in core/compression.

#include <cstdint>
#include <string_view>

namespace gateway {

enum class content_coding : std::uint8_t {
  identity,  // no coding
  gzip,      // the gzip file format (RFC 1952)
  deflate,   // the zlib format (RFC 1950), as RFC 9110 8.4.1.2 defines "deflate"
  unknown,   // a coding not decoded here, or several layered ones
};

// "gzip", "deflate", or "identity" / "unknown".
std::string_view to_string(content_coding coding);

// The coding to answer in given a request's Accept-Encoding value (empty: the field is absent): gzip
// or deflate when the client accepts it with a q-value above zero and not below that of an explicitly
// listed `identity`, the higher q winning and gzip on a tie; `*` stands for codings not listed
// (RFC 9110 12.5.3). Tokens are case-insensitive; `x-gzip` is gzip (RFC 9110 8.4.1.3); a coding listed
// twice keeps its lower q. A member whose q-value is malformed is ignored. Anything else (nothing
// acceptable, `identity;q=0` alone) is identity: an unencoded answer is always sent rather than 406.
content_coding negotiate_coding(std::string_view accept_encoding);

// The coding a Content-Encoding field value names: identity for an empty value or `identity`, gzip
// (also `x-gzip`), deflate; unknown for anything else, a list of several codings included.
content_coding parse_content_coding(std::string_view value);

}  // namespace gateway
