#include "gateway/observe/protobuf_writer.hpp"

#include <array>
#include <bit>
#include <cassert>
#include <limits>

namespace gateway {

void protobuf_writer::put_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out += static_cast<char>(static_cast<std::uint8_t>(value) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
}

void protobuf_writer::uint64_field(std::uint32_t field, std::uint64_t value) {
  put_key(out_, field, wire_type::varint);
  put_varint(out_, value);
}

void protobuf_writer::fixed64_field(std::uint32_t field, std::uint64_t value) {
  put_key(out_, field, wire_type::fixed64);
  for (int i = 0; i < 8; ++i, value >>= 8) out_ += static_cast<char>(static_cast<std::uint8_t>(value));
}

void protobuf_writer::double_field(std::uint32_t field, double value) {
  static_assert(sizeof(double) == 8 && std::numeric_limits<double>::is_iec559);
  fixed64_field(field, std::bit_cast<std::uint64_t>(value));
}

void protobuf_writer::bytes_field(std::uint32_t field, std::string_view bytes) {
  put_key(out_, field, wire_type::length_delimited);
  put_varint(out_, bytes.size());
  out_ += bytes;
}

void protobuf_writer::bytes_field(std::uint32_t field, std::span<const std::uint8_t> bytes) {
  bytes_field(field, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

std::size_t protobuf_writer::open(std::uint32_t field) {
  put_key(out_, field, wire_type::length_delimited);
  return out_.size();
}

void protobuf_writer::close(std::size_t mark) {
  assert(mark <= out_.size());
  std::string length;
  put_varint(length, out_.size() - mark);
  // Moves the content up by the length's few bytes: nested messages are small, and the outermost one
  // (a whole batch) moves once per export.
  out_.insert(mark, length);
}

}  // namespace gateway
