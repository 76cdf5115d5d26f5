#pragma once
// The gzip and deflate content codings with zlib, the one place that uses it: compressing an answer,
// and inflating an answer within a bound. Pure functions of their arguments: no state is kept between
// calls; they allocate only the output and zlib's working memory (to compress: about 8 times the input,
// at most 256 KiB; to inflate: about 40 KiB), freed on return.

#include "gateway/codec/content_coding.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gateway {

// Compresses `data` into `out` (replaced) in `coding` (gzip or deflate) at zlib `level` (1-9). False
// when zlib fails (it cannot allocate its memory); `out` is then empty.
bool compress(std::string_view data, content_coding coding, int level, std::string& out);

enum class inflate_status : std::uint8_t {
  ok,
  too_large,  // the decoded body would exceed the bound: decoding stopped there (a zip bomb)
  corrupt,    // not a complete, valid stream of the coding (truncated, bad checksum, trailing bytes)
  no_memory,  // zlib could not allocate its memory
};

// Decodes `data` (gzip: one or more members; deflate: the zlib format, or raw deflate as some servers
// send it) into `out` (replaced), never holding more than `max_bytes` + 1 decoded bytes, whatever the
// input claims: an answer that decodes to more is too_large. `out` holds the body when ok, else
// something unspecified. `coding` must be gzip or deflate.
inflate_status inflate_bounded(std::string_view data, content_coding coding, std::size_t max_bytes,
                               std::string& out);

}  // namespace gateway
