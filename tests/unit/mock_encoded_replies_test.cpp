// The mock's content-coding modes: `compressed` honours Accept-Encoding; the zip bomb, the corrupt body and
// the unknown coding are what their names promise, whatever the request accepts.

#include "gateway/codec/compression.hpp"
#include "loadtest/mock/encoded_replies.hpp"

#include <catch2/catch.hpp>

using namespace mock;
using gateway::content_coding;
using gateway::inflate_status;

TEST_CASE("mock: compressed answers follow Accept-Encoding", "[compression][mock]") {
  const std::string plain = R"({"source":"coupon","sku":"A1","priceCent":1,"stock":2})";
  std::string out;

  auto reply = encode_reply(mode::compressed, plain, "gzip, deflate");
  CHECK(reply.coding == "gzip");
  CHECK(gateway::inflate_bounded(reply.body, content_coding::gzip, plain.size(), out) == inflate_status::ok);
  CHECK(out == plain);

  reply = encode_reply(mode::compressed, plain, "gzip;q=0, deflate");
  CHECK(reply.coding == "deflate");
  CHECK(gateway::inflate_bounded(reply.body, content_coding::deflate, plain.size(), out) ==
        inflate_status::ok);
  CHECK(out == plain);

  for (const char* accept : {"", "identity", "gzip;q=0, deflate;q=0"}) {
    INFO(accept);
    reply = encode_reply(mode::compressed, plain, accept);
    CHECK(reply.coding.empty());
    CHECK(reply.body == plain);
  }
}

TEST_CASE("mock: the zip bomb, the corrupt body and the unknown coding", "[compression][mock]") {
  const std::string plain = R"({"source":"coupon"})";
  std::string out;

  auto reply = encode_reply(mode::zipbomb, plain, "");
  CHECK(reply.coding == "gzip");
  CHECK(reply.body.size() < 64 * 1024);
  CHECK(gateway::inflate_bounded(reply.body, content_coding::gzip, 1 << 20, out) ==
        inflate_status::too_large);
  CHECK(gateway::inflate_bounded(reply.body, content_coding::gzip, 16 << 20, out) == inflate_status::ok);
  CHECK(out.size() == 16u << 20);
  CHECK(out.starts_with(R"({"pad":")"));

  reply = encode_reply(mode::badgzip, plain, "gzip");
  CHECK(reply.coding == "gzip");
  CHECK(gateway::inflate_bounded(reply.body, content_coding::gzip, 1 << 20, out) == inflate_status::corrupt);

  reply = encode_reply(mode::brotli, plain, "gzip");
  CHECK(reply.coding == "br");
  CHECK(reply.body == plain);
}
