// Content codings: Accept-Encoding negotiation, Content-Encoding values, compression round trips, and
// inflation within a bound (zip bombs, corrupt and truncated streams).

#include "gateway/codec/compression.hpp"

#include <zlib.h>
#include <catch2/catch.hpp>

#include <string>

using namespace gateway;
using namespace std::string_literals;

namespace {

// {"a":1} encoded by Python's gzip and zlib modules: streams made by another implementation.
const std::string gzip_a =
    "\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03\xab\x56\x4a\x54\xb2\x32\xac\x05\x00\xaf\xac"
    "\x1b\x56\x07\x00\x00\x00"s;
const std::string raw_deflate_a = "\xab\x56\x4a\x54\xb2\x32\xac\x05\x00"s;
const std::string zlib_a = "\x78\x9c\xab\x56\x4a\x54\xb2\x32\xac\x05\x00\x08\x2a\x02\x09"s;

std::string sample_json(std::size_t entries) {
  std::string s = "[";
  for (std::size_t i = 0; i < entries; ++i) {
    if (i) s += ',';
    s += R"({"source":"coupon","sku":"A)" + std::to_string(i) + R"(","priceCent":1234,"degraded":false})";
  }
  return s + "]";
}

std::string compressed(std::string_view data, content_coding coding, int level = 6) {
  std::string out;
  REQUIRE(compress(data, coding, level, out));
  return out;
}

}  // namespace

TEST_CASE("compression: Accept-Encoding negotiation", "[compression]") {
  using enum content_coding;
  struct row {
    const char* accept;
    content_coding expected;
  };
  const row rows[] = {
      {"", identity},
      {"gzip", gzip},
      {"GZip", gzip},
      {"x-gzip", gzip},
      {"deflate", deflate},
      {"gzip, deflate", gzip},
      {"deflate, gzip", gzip},               // equal weights: gzip
      {"deflate;q=1, gzip;q=0.5", deflate},  // the higher weight
      {"gzip;q=0", identity},                // refused
      {"gzip;Q=0.000", identity},            // "q" is case-insensitive
      {"gzip;q=0, deflate", deflate},        // the other one
      {"gzip;q=0, gzip", identity},          // listed twice: the refusal stands
      {"*", gzip},                           // any coding
      {"*;q=0", identity},                   // none
      {"*, gzip;q=0", deflate},              // any but gzip
      {"*;q=0, deflate;q=0.1", deflate},     // only deflate
      {"identity", identity},                // nothing compressed listed
      {"identity;q=0", identity},            // nothing acceptable: unencoded anyway
      {"gzip;q=0.5, identity", identity},    // identity preferred explicitly
      {"gzip, identity;q=0.5", gzip},        //
      {"gzip;q=0.5", gzip},                  // identity not listed: not competing
      {"br", identity},                      // unknown codings are ignored
      {"br;q=1, zstd, gzip;q=0.2", gzip},    //
      {" gzip ;  q=0.8 , deflate;q=0.9", deflate},
      {"gzip;q=1.0", gzip},
      {"gzip;q=1.001", identity},            // malformed weight: member ignored
      {"gzip;q=2", identity},                //
      {"gzip;q=0.1234", identity},           // more than three digits
      {"gzip;q = 0.5", identity},            // no whitespace around '='
      {"gzip;level=1", identity},            // only a weight may follow
      {",,gzip,,", gzip},                    // empty members
      {"gzipx, xgzip, deflate2", identity},  // tokens match whole
      {"gzip;q=0.001", gzip},                // the smallest weight above zero
  };
  for (const auto& r : rows) {
    INFO("Accept-Encoding: " << r.accept);
    CHECK(negotiate_coding(r.accept) == r.expected);
  }
}

TEST_CASE("compression: Content-Encoding values", "[compression]") {
  using enum content_coding;
  CHECK(parse_content_coding("") == identity);
  CHECK(parse_content_coding("identity") == identity);
  CHECK(parse_content_coding("gzip") == gzip);
  CHECK(parse_content_coding(" GZIP ") == gzip);
  CHECK(parse_content_coding("x-gzip") == gzip);
  CHECK(parse_content_coding("Deflate") == deflate);
  CHECK(parse_content_coding("br") == unknown);
  CHECK(parse_content_coding("gzip, gzip") == unknown);  // layered codings are not decoded
  CHECK(parse_content_coding("deflate, gzip") == unknown);
  CHECK(to_string(gzip) == "gzip");
  CHECK(to_string(deflate) == "deflate");
}

TEST_CASE("compression: gzip and deflate round trips", "[compression]") {
  const auto coding = GENERATE(content_coding::gzip, content_coding::deflate);
  const auto level = GENERATE(1, 6, 9);
  const auto size = GENERATE(0, 1, 100, 70'000);
  const auto json = sample_json(static_cast<std::size_t>(size));
  INFO(to_string(coding) << " level " << level << " entries " << size);
  const auto packed = compressed(json, coding, level);
  if (coding == content_coding::gzip) {
    REQUIRE(packed.size() >= 18);
    CHECK(packed.substr(0, 3) == "\x1f\x8b\x08"s);  // gzip magic, method deflate
  } else {
    // The zlib format: zlib's own uncompress() reads it.
    std::string plain(json.size(), '\0');
    uLongf length = static_cast<uLongf>(plain.size());
    REQUIRE(uncompress(reinterpret_cast<Bytef*>(plain.data()), &length,
                       reinterpret_cast<const Bytef*>(packed.data()),
                       static_cast<uLong>(packed.size())) == Z_OK);
    CHECK(plain == json);
  }
  if (size == 70'000) CHECK(packed.size() * 10 < json.size());  // JSON compresses well
  std::string out;
  CHECK(inflate_bounded(packed, coding, json.size(), out) == inflate_status::ok);
  CHECK(out == json);
}

TEST_CASE("compression: streams made elsewhere inflate", "[compression]") {
  std::string out;
  CHECK(inflate_bounded(gzip_a, content_coding::gzip, 64, out) == inflate_status::ok);
  CHECK(out == R"({"a":1})");
  CHECK(inflate_bounded(zlib_a, content_coding::deflate, 64, out) == inflate_status::ok);
  CHECK(out == R"({"a":1})");
  // Raw deflate labelled "deflate", as some servers send it.
  CHECK(inflate_bounded(raw_deflate_a, content_coding::deflate, 64, out) == inflate_status::ok);
  CHECK(out == R"({"a":1})");
  // Two gzip members are one body (RFC 1952 2.2).
  CHECK(inflate_bounded(gzip_a + gzip_a, content_coding::gzip, 64, out) == inflate_status::ok);
  CHECK(out == R"({"a":1}{"a":1})");
}

TEST_CASE("compression: inflation stops at the bound (zip bomb)", "[compression]") {
  const auto coding = GENERATE(content_coding::gzip, content_coding::deflate);
  // 64 MiB of one byte: about 64 KiB compressed, a ratio of about 1000.
  const std::string huge(64u << 20, 'x');
  const auto bomb = compressed(huge, coding, 9);
  CHECK(bomb.size() < 128 * 1024);
  std::string out;
  CHECK(inflate_bounded(bomb, coding, 1 << 20, out) == inflate_status::too_large);
  CHECK(out.size() <= (1u << 20) + 1);
  CHECK(out.capacity() < (2u << 20));  // never grown towards the claimed size

  // The bound itself is allowed; one byte more is not.
  const std::string exact(1000, 'y');
  const auto packed = compressed(exact, coding);
  CHECK(inflate_bounded(packed, coding, 1000, out) == inflate_status::ok);
  CHECK(out == exact);
  CHECK(inflate_bounded(packed, coding, 999, out) == inflate_status::too_large);
  CHECK(inflate_bounded(packed, coding, 0, out) == inflate_status::too_large);
}

TEST_CASE("compression: corrupt, truncated and mislabelled streams", "[compression]") {
  const auto json = sample_json(50);
  const auto packed = compressed(json, content_coding::gzip);
  std::string out;
  using enum inflate_status;
  CHECK(inflate_bounded("", content_coding::gzip, 1024, out) == corrupt);
  CHECK(inflate_bounded("", content_coding::deflate, 1024, out) == corrupt);
  CHECK(inflate_bounded(json, content_coding::gzip, 1 << 20, out) == corrupt);  // not compressed at all
  CHECK(inflate_bounded(packed.substr(0, packed.size() / 2), content_coding::gzip, 1 << 20, out) == corrupt);
  CHECK(inflate_bounded(packed.substr(0, packed.size() - 1), content_coding::gzip, 1 << 20, out) == corrupt);

  auto bad_crc = packed;
  bad_crc[bad_crc.size() - 6] ^= 0x55;  // in the CRC-32 of the trailer
  CHECK(inflate_bounded(bad_crc, content_coding::gzip, 1 << 20, out) == corrupt);

  auto flipped = packed;
  flipped[flipped.size() / 2] ^= 0xff;
  CHECK(inflate_bounded(flipped, content_coding::gzip, 1 << 20, out) != ok);

  CHECK(inflate_bounded(packed + "trailing", content_coding::gzip, 1 << 20, out) == corrupt);
  CHECK(inflate_bounded(packed + "\x1f", content_coding::gzip, 1 << 20, out) == corrupt);
  const auto zlib_packed = compressed(json, content_coding::deflate);
  CHECK(inflate_bounded(zlib_packed + "x", content_coding::deflate, 1 << 20, out) == corrupt);
  // A gzip stream labelled deflate, and the reverse.
  CHECK(inflate_bounded(packed, content_coding::deflate, 1 << 20, out) == corrupt);
  CHECK(inflate_bounded(zlib_packed, content_coding::gzip, 1 << 20, out) == corrupt);
}
