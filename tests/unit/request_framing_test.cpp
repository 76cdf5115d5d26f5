// Transfer codings of a request (RFC 9112 6.1, 6.3): chunked alone is usable; any other final coding
// leaves no length (400); chunked after a coding the gateway does not decode is 501.

#include "gateway/server/request_framing.hpp"

#include <catch2/catch.hpp>

using namespace gateway;

TEST_CASE("request transfer codings: chunked alone is the one usable framing") {
  CHECK(transfer_coding_status(false, "") == 0);
  CHECK(transfer_coding_status(true, "chunked") == 0);
  CHECK(transfer_coding_status(true, "Chunked") == 0);
  CHECK(transfer_coding_status(true, " CHUNKED ") == 0);
}

TEST_CASE("request transfer codings: a final coding other than chunked is 400") {
  for (const char* v : {"", "gzip", "chunked, gzip", "identity", "x-custom", "chunked, chunked", "chunked,",
                        ",chunked", "gzip,,chunked", " ", "chunkedx"}) {
    INFO(v);
    CHECK(transfer_coding_status(true, v) == 400);
  }
}

TEST_CASE("request transfer codings: chunked after a coding not decoded here is 501") {
  for (const char* v : {"gzip, chunked", "deflate,chunked", "x-unknown, chunked", "gzip, br, chunked"}) {
    INFO(v);
    CHECK(transfer_coding_status(true, v) == 501);
  }
}
