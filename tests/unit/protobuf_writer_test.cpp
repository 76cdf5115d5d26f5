// The protobuf wire format writer behind the OTLP export: varint, key, fixed-width and length edge cases,
// with expected bytes from the protobuf encoding guide.

#include "gateway/observe/protobuf_writer.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace gateway;

namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string s;
  for (int v : values) s += static_cast<char>(v);
  return s;
}

std::string varint(std::uint64_t v) {
  std::string s;
  protobuf_writer::put_varint(s, v);
  return s;
}

}  // namespace

TEST_CASE("protobuf writer: varints at their byte boundaries") {
  CHECK(varint(0) == bytes({0x00}));
  CHECK(varint(1) == bytes({0x01}));
  CHECK(varint(127) == bytes({0x7f}));
  CHECK(varint(128) == bytes({0x80, 0x01}));
  CHECK(varint(150) == bytes({0x96, 0x01}));
  CHECK(varint(300) == bytes({0xac, 0x02}));
  CHECK(varint(16383) == bytes({0xff, 0x7f}));
  CHECK(varint(16384) == bytes({0x80, 0x80, 0x01}));
  CHECK(varint(0xffffffffu) == bytes({0xff, 0xff, 0xff, 0xff, 0x0f}));
  CHECK(varint(std::uint64_t{1} << 32) == bytes({0x80, 0x80, 0x80, 0x80, 0x10}));
  CHECK(varint(std::numeric_limits<std::uint64_t>::max()) ==
        bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
}

TEST_CASE("protobuf writer: int64 and bool fields") {
  protobuf_writer w;
  w.int64_field(3, -1);  // two's complement: ten bytes
  CHECK(w.bytes() == bytes({0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
  protobuf_writer min;
  min.int64_field(3, std::numeric_limits<std::int64_t>::min());
  CHECK(min.bytes() == bytes({0x18, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}));
  protobuf_writer pos;
  pos.int64_field(3, 150);
  pos.bool_field(2, true);
  pos.bool_field(2, false);  // written: the caller decides what to omit
  CHECK(pos.bytes() == bytes({0x18, 0x96, 0x01, 0x10, 0x01, 0x10, 0x00}));
}

TEST_CASE("protobuf writer: keys of small and large field numbers") {
  std::string s;
  protobuf_writer::put_key(s, 1, protobuf_writer::wire_type::varint);
  CHECK(s == bytes({0x08}));
  s.clear();
  protobuf_writer::put_key(s, 15, protobuf_writer::wire_type::length_delimited);
  CHECK(s == bytes({0x7a}));
  s.clear();
  protobuf_writer::put_key(s, 16, protobuf_writer::wire_type::varint);  // no longer fits one byte
  CHECK(s == bytes({0x80, 0x01}));
  s.clear();
  protobuf_writer::put_key(s, (1u << 29) - 1, protobuf_writer::wire_type::fixed32);  // the largest field
  CHECK(s == bytes({0xfd, 0xff, 0xff, 0xff, 0x0f}));
}

TEST_CASE("protobuf writer: fixed64 and double are little-endian") {
  protobuf_writer w;
  w.fixed64_field(7, 0x0102030405060708u);
  CHECK(w.bytes() == bytes({0x39, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01}));
  protobuf_writer d;
  d.double_field(4, 1.0);
  CHECK(d.bytes() == bytes({0x21, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x3f}));
  protobuf_writer neg;
  neg.double_field(4, -2.5);
  CHECK(neg.bytes() == bytes({0x21, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0xc0}));
  protobuf_writer zero;
  zero.fixed64_field(8, 0);
  CHECK(zero.bytes() == bytes({0x41, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST_CASE("protobuf writer: strings and bytes with their lengths") {
  protobuf_writer w;
  w.bytes_field(1, std::string_view("testing"));
  CHECK(w.bytes() == bytes({0x0a, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g'}));
  protobuf_writer empty;
  empty.bytes_field(1, std::string_view());
  CHECK(empty.bytes() == bytes({0x0a, 0x00}));
  protobuf_writer binary;
  const std::vector<std::uint8_t> id{0x00, 0xff, 0x10};
  binary.bytes_field(2, id);
  CHECK(binary.bytes() == bytes({0x12, 0x03, 0x00, 0xff, 0x10}));
  protobuf_writer nul;
  nul.bytes_field(1, std::string_view("a\0b", 3));  // embedded NUL kept
  CHECK(nul.bytes() == bytes({0x0a, 0x03, 'a', 0x00, 'b'}));
  protobuf_writer long_text;
  long_text.bytes_field(1, std::string(300, 'x'));
  CHECK(long_text.bytes().substr(0, 3) == bytes({0x0a, 0xac, 0x02}));
  CHECK(long_text.bytes().size() == 3 + 300);
}

TEST_CASE("protobuf writer: nested messages get their lengths in front") {
  protobuf_writer w;
  const auto empty = w.open(5);
  w.close(empty);
  CHECK(w.bytes() == bytes({0x2a, 0x00}));

  // 127 bytes of content: one length byte; 128: two, inserted before content already written.
  for (const std::size_t size :
       {std::size_t{125}, std::size_t{126}, std::size_t{16381}, std::size_t{16382}}) {
    protobuf_writer n;
    const auto m = n.open(1);
    n.bytes_field(2, std::string(size, 'y'));  // content: key, length (1 or 2 bytes), bytes
    n.close(m);
    const std::size_t content = 1 + varint(size).size() + size;
    const std::string length = varint(content);
    CHECK(n.bytes().size() == 1 + length.size() + content);
    CHECK(n.bytes().substr(1, length.size()) == length);
    CHECK(n.bytes()[1 + length.size()] == 0x12);
  }

  // Two levels, closing inner first; the outer length counts the inner length's bytes.
  protobuf_writer two;
  const auto outer = two.open(1);
  two.uint64_field(1, 1);
  const auto inner = two.open(2);
  two.bytes_field(1, std::string(200, 'z'));
  two.close(inner);
  two.uint64_field(3, 2);
  two.close(outer);
  const std::string& b = two.bytes();
  // outer: key 0x0a, length of (2 + 1 + 2 + 3 + 200 + 2) = 210 -> 0xd2 0x01
  CHECK(b.substr(0, 3) == bytes({0x0a, 0xd2, 0x01}));
  CHECK(b.substr(3, 2) == bytes({0x08, 0x01}));
  // inner: key 0x12, length 203 -> 0xcb 0x01, then its field: 0x0a, 200 -> 0xc8 0x01
  CHECK(b.substr(5, 6) == bytes({0x12, 0xcb, 0x01, 0x0a, 0xc8, 0x01}));
  CHECK(b.substr(b.size() - 2) == bytes({0x18, 0x02}));
  CHECK(b.size() == 3 + 210);
}
