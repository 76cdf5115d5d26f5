#pragma once
// Protocol Buffers wire format, write side only (https://protobuf.dev/programming-guides/encoding/):
// enough for the OTLP messages the tracer sends (otlp_encoding.hpp). Fields are written in the order
// the caller writes them; proto3 defaults are the caller's to omit. Pure; no exceptions but bad_alloc.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace gateway {

class protobuf_writer {
 public:
  enum class wire_type : std::uint8_t { varint = 0, fixed64 = 1, length_delimited = 2, fixed32 = 5 };

  // Scalar fields. int64 and enums are varints of their two's complement (a negative int64 takes ten
  // bytes); double and fixed64 are eight little-endian bytes.
  void uint64_field(std::uint32_t field, std::uint64_t value);
  void int64_field(std::uint32_t field, std::int64_t value) {
    uint64_field(field, static_cast<std::uint64_t>(value));
  }
  void bool_field(std::uint32_t field, bool value) { uint64_field(field, value ? 1 : 0); }
  void fixed64_field(std::uint32_t field, std::uint64_t value);
  void double_field(std::uint32_t field, double value);
  // string and bytes fields: a length, then the bytes as they are.
  void bytes_field(std::uint32_t field, std::string_view bytes);
  void bytes_field(std::uint32_t field, std::span<const std::uint8_t> bytes);

  // A nested message: open() writes its tag and returns a mark; the fields written until close(mark) are
  // its content, whose length close() inserts in front of it (the shortest varint, as protobuf writes).
  // Nested messages close in reverse order of opening.
  std::size_t open(std::uint32_t field);
  void close(std::size_t mark);

  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }

  // The building blocks, exposed for tests: a base-128 varint, and a field's key (field << 3 | type).
  static void put_varint(std::string& out, std::uint64_t value);
  static void put_key(std::string& out, std::uint32_t field, wire_type type) {
    put_varint(out, std::uint64_t{field} << 3 | static_cast<std::uint8_t>(type));
  }

 private:
  std::string out_;
};

}  // namespace gateway
