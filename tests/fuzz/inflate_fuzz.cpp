// libFuzzer target: gateway::inflate_bounded on hostile downstream bodies, and the text of content codings.
// Input: byte 0 picks the coding (gzip or deflate), bytes 1-2 the bound on the decoded size (0-65535); the
// rest is the body as a downstream sends it, and also an Accept-Encoding and a Content-Encoding value.
// Invariants: the decoded body never exceeds the bound when ok, and decoding never holds more than the
// bound + 1 bytes whatever the stream claims; a body that decodes is decoded the same under a larger
// bound, and one that is too large stays too large under a smaller one; compressing the payload and
// inflating it gives it back, exactly at its own size as the bound and too_large one byte below; the
// negotiation only ever picks identity, gzip or deflate.

#include "gateway/codec/compression.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <algorithm>
#include <string>

namespace {

using gateway::content_coding;
using gateway::inflate_status;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::input in(data, size);
  const auto coding = (in.byte() & 1) != 0 ? content_coding::deflate : content_coding::gzip;
  const std::size_t bound = std::size_t{in.byte()} << 8 | in.byte();
  const auto payload = in.rest();

  std::string out;
  const auto status = gateway::inflate_bounded(payload, coding, bound, out);
  FUZZ_CHECK(out.size() <= bound + 1);
  FUZZ_CHECK(out.capacity() <= std::max<std::size_t>(2 * (bound + 1), 15));  // (15: the string's own room)
  if (status == inflate_status::ok) {
    FUZZ_CHECK(out.size() <= bound);
    std::string again;
    FUZZ_CHECK(gateway::inflate_bounded(payload, coding, bound + 1000, again) == inflate_status::ok);
    FUZZ_CHECK(again == out);
  } else if (status == inflate_status::too_large && bound > 0) {
    std::string smaller;
    FUZZ_CHECK(gateway::inflate_bounded(payload, coding, bound - 1, smaller) == inflate_status::too_large);
  }

  // Round trip of the payload itself, bounded at its own size.
  std::string packed;
  FUZZ_CHECK(gateway::compress(payload, coding, 1 + static_cast<int>(size % 9), packed));
  std::string plain;
  FUZZ_CHECK(gateway::inflate_bounded(packed, coding, payload.size(), plain) == inflate_status::ok);
  FUZZ_CHECK(plain == payload);
  if (!payload.empty()) {
    FUZZ_CHECK(gateway::inflate_bounded(packed, coding, payload.size() - 1, plain) ==
               inflate_status::too_large);
  }

  const auto chosen = gateway::negotiate_coding(payload);
  FUZZ_CHECK(chosen == content_coding::identity || chosen == content_coding::gzip ||
             chosen == content_coding::deflate);
  (void)gateway::parse_content_coding(payload);
  return 0;
}
