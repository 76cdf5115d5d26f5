#include "loadtest/mock/encoded_replies.hpp"

#include "gateway/codec/compression.hpp"
#include "loadtest/mock/replies.hpp"

#include <new>

namespace mock {
namespace {

std::string encoded(std::string_view plain, gateway::content_coding coding, int level = 6) {
  std::string out;
  if (!gateway::compress(plain, coding, level, out)) throw std::bad_alloc();
  return out;
}

}  // namespace

const std::string& zip_bomb() {
  static const std::string body = encoded(padded_object(16 * 1024 * 1024), gateway::content_coding::gzip, 9);
  return body;
}

encoded_reply encode_reply(mode how, std::string_view plain, std::string_view accept_encoding) {
  using gateway::content_coding;
  switch (how) {
    case mode::compressed: {
      const auto coding = gateway::negotiate_coding(accept_encoding);
      if (coding == content_coding::identity) return {{}, std::string(plain)};
      return {gateway::to_string(coding), encoded(plain, coding)};
    }
    case mode::zipbomb:
      return {"gzip", zip_bomb()};
    case mode::badgzip: {
      // The gzip trailer ends in the CRC-32 and the length of the plain text: a broken CRC leaves a stream
      // that inflates completely and fails only at its very end.
      auto body = encoded(plain, content_coding::gzip);
      body[body.size() - 8] = static_cast<char>(body[body.size() - 8] ^ 0x5a);
      return {"gzip", std::move(body)};
    }
    case mode::brotli:
    default:  // (only the four modes above are given)
      return {"br", std::string(plain)};
  }
}

}  // namespace mock
