#include "gateway/codec/compression.hpp"

#include <zlib.h>

#include <algorithm>
#include <climits>

namespace gateway {
namespace {

constexpr int gzip_window_bits = 15 + 16;  // the gzip wrapper, the largest window
constexpr int zlib_window_bits = 15;       // the zlib wrapper
constexpr int raw_window_bits = -15;       // no wrapper
// zlib counts in 32-bit unsigned ints: larger inputs are fed in pieces of this size.
constexpr std::size_t zlib_piece = std::size_t{1} << 30;

}  // namespace

bool compress(std::string_view data, content_coding coding, int level, std::string& out) {
  out.clear();
  // The window and hash table sized to the input (about the same output for an input the window holds):
  // zlib's full-size tables are 256 KiB, whose allocation and first touch cost far more than compressing
  // a typical answer of a few KiB (measured: ~700 us against ~5 us for 1 KiB at level 1).
  int window = 9;  // zlib's smallest
  while (window < 15 && (std::size_t{1} << window) < data.size()) ++window;
  const int memory = std::clamp(window - 7, 1, 8);
  z_stream zs{};
  const int bits = coding == content_coding::gzip ? window + 16 : window;
  if (deflateInit2(&zs, level, Z_DEFLATED, bits, memory, Z_DEFAULT_STRATEGY) != Z_OK) return false;
  // Room for the worst case, so that deflate never runs out of output; given in pieces zlib can count.
  out.resize(deflateBound(&zs, static_cast<uLong>(std::min<std::size_t>(data.size(), ULONG_MAX))));
  std::size_t in_at = 0, out_at = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    const auto in_piece = std::min(data.size() - in_at, zlib_piece);
    const auto out_piece = std::min(out.size() - out_at, zlib_piece);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + in_at));
    zs.avail_in = static_cast<uInt>(in_piece);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + out_at);
    zs.avail_out = static_cast<uInt>(out_piece);
    const bool last = in_at + in_piece == data.size();
    rc = deflate(&zs, last ? Z_FINISH : Z_NO_FLUSH);
    in_at += in_piece - zs.avail_in;
    out_at += out_piece - zs.avail_out;
  }
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    out.clear();
    return false;
  }
  out.resize(out_at);
  return true;
}

namespace {

// RFC 1950: a zlib stream starts with CMF (method 8, window at most 32 KiB) and FLG, together a multiple
// of 31. Servers that send raw deflate as "deflate" do not.
bool zlib_header(std::string_view data) {
  if (data.size() < 2) return false;
  const auto cmf = static_cast<unsigned char>(data[0]);
  const auto flg = static_cast<unsigned char>(data[1]);
  return (cmf & 0x0f) == 8 && (cmf >> 4) <= 7 && ((cmf << 8) | flg) % 31 == 0;
}

bool gzip_magic(std::string_view data) {
  return data.size() >= 2 && data[0] == '\x1f' && data[1] == '\x8b';
}

}  // namespace

inflate_status inflate_bounded(std::string_view data, content_coding coding, std::size_t max_bytes,
                               std::string& out) {
  out.clear();
  const bool gzip = coding == content_coding::gzip;
  z_stream zs{};
  const int bits = gzip ? gzip_window_bits : zlib_header(data) ? zlib_window_bits : raw_window_bits;
  if (inflateInit2(&zs, bits) != Z_OK) return inflate_status::no_memory;
  // Never more than max_bytes + 1 decoded bytes: the one past the bound tells a body that is too large.
  const std::size_t cap = max_bytes < SIZE_MAX ? max_bytes + 1 : max_bytes;
  out.resize(std::min(cap, std::max<std::size_t>(data.size() * 4, 16 * 1024)));
  std::size_t in_at = 0, out_at = 0;
  auto status = inflate_status::ok;
  for (;;) {
    if (zs.avail_in == 0 && in_at < data.size()) {
      const auto piece = std::min(data.size() - in_at, zlib_piece);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + in_at));
      zs.avail_in = static_cast<uInt>(piece);
      in_at += piece;
    }
    if (out_at == out.size()) {
      if (out.size() >= cap) {
        status = inflate_status::too_large;
        break;
      }
      out.resize(std::min(cap, out.size() * 2));
    }
    const auto out_piece = std::min(out.size() - out_at, zlib_piece);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + out_at);
    zs.avail_out = static_cast<uInt>(out_piece);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    out_at += out_piece - zs.avail_out;
    if (rc == Z_OK) continue;
    if (rc == Z_STREAM_END) {
      const auto rest = data.substr(in_at - zs.avail_in);
      if (rest.empty()) break;
      // Another gzip member (RFC 1952 2.2); anything else behind the stream is not part of the coding.
      if (gzip && gzip_magic(rest) && inflateReset(&zs) == Z_OK) continue;
      status = inflate_status::corrupt;
      break;
    }
    if (rc == Z_BUF_ERROR && zs.avail_out == 0) continue;  // the output is full: it grows above
    // Z_BUF_ERROR with output room left: the input ended inside the stream (truncated).
    status = rc == Z_MEM_ERROR ? inflate_status::no_memory : inflate_status::corrupt;
    break;
  }
  inflateEnd(&zs);
  if (status == inflate_status::ok && out_at > max_bytes) status = inflate_status::too_large;
  out.resize(out_at);
  return status;
}

}  // namespace gateway
