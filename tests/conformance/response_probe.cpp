// Runs gateway::response_parser over test cases the way a downstream call drives it
// (downstream/http_call.cpp): bytes are put(), the unconsumed rest is presented again with the next bytes,
// need_more reads more, the end of the connection is put_eof(), and a connection that ends before any byte is
// end_of_stream. Each case is parsed whole and cut into pieces of 1 to 7 bytes; the results must not depend
// on the cuts.
//
// stdin, one case a line:   <id> <eof: 0|1> <bytes, base64>
// stdout, one JSON object a line: {"id", "result": done|error|incomplete|inconsistent, "status",
//   "consumed" (bytes of the stream that belong to the message), "keep_alive", "error" (the Beast error's
//   name, "" when none), "body" (base64), "detail" (which cut disagreed, for inconsistent)}.
// Exit status 0 unless the input is malformed.

#include "gateway/downstream/response_parser.hpp"

#include <boost/beast/http/error.hpp>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

namespace {

namespace http = boost::beast::http;
using boost::system::error_code;

// The limits a downstream call uses (downstream/http_call.cpp, config max_response_bytes default).
constexpr std::size_t body_limit = 1024 * 1024;
constexpr std::size_t header_limit = 16 * 1024;

constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string to_base64(std::string_view in) {
  std::string out;
  std::size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    const auto v = static_cast<std::uint32_t>(static_cast<unsigned char>(in[i])) << 16 |
                   static_cast<std::uint32_t>(static_cast<unsigned char>(in[i + 1])) << 8 |
                   static_cast<unsigned char>(in[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6) out += alphabet[v >> shift & 63];
  }
  if (const auto left = in.size() - i; left > 0) {
    auto v = static_cast<std::uint32_t>(static_cast<unsigned char>(in[i])) << 16;
    if (left == 2) v |= static_cast<std::uint32_t>(static_cast<unsigned char>(in[i + 1])) << 8;
    out += alphabet[v >> 18 & 63];
    out += alphabet[v >> 12 & 63];
    out += left == 2 ? alphabet[v >> 6 & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> from_base64(std::string_view in) {
  std::string out;
  std::uint32_t bits = 0;
  int count = 0;
  for (const char c : in) {
    if (c == '=') break;
    const auto at = alphabet.find(c);
    if (at == std::string_view::npos) return std::nullopt;
    bits = bits << 6 | static_cast<std::uint32_t>(at);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += static_cast<char>(bits >> count & 0xFF);
    }
  }
  return out;
}

constexpr std::pair<http::error, std::string_view> error_names[] = {
    {http::error::end_of_stream, "end_of_stream"},
    {http::error::partial_message, "partial_message"},
    {http::error::need_more, "need_more"},
    {http::error::unexpected_body, "unexpected_body"},
    {http::error::need_buffer, "need_buffer"},
    {http::error::end_of_chunk, "end_of_chunk"},
    {http::error::buffer_overflow, "buffer_overflow"},
    {http::error::header_limit, "header_limit"},
    {http::error::body_limit, "body_limit"},
    {http::error::bad_alloc, "bad_alloc"},
    {http::error::bad_line_ending, "bad_line_ending"},
    {http::error::bad_method, "bad_method"},
    {http::error::bad_target, "bad_target"},
    {http::error::bad_version, "bad_version"},
    {http::error::bad_status, "bad_status"},
    {http::error::bad_reason, "bad_reason"},
    {http::error::bad_field, "bad_field"},
    {http::error::bad_value, "bad_value"},
    {http::error::bad_content_length, "bad_content_length"},
    {http::error::bad_transfer_encoding, "bad_transfer_encoding"},
    {http::error::bad_chunk, "bad_chunk"},
    {http::error::bad_chunk_extension, "bad_chunk_extension"},
    {http::error::bad_obs_fold, "bad_obs_fold"},
    {http::error::multiple_content_length, "multiple_content_length"},
    {http::error::stale_parser, "stale_parser"},
    {http::error::short_read, "short_read"},
};

// The enumerator's name, as the tests compare it.
std::string error_name(const error_code& ec) {
  if (!ec) return "";
  for (const auto& [value, name] : error_names) {
    if (ec == value) return std::string(name);
  }
  return ec.message();
}

struct outcome {
  std::string result;  // done, error or incomplete
  unsigned status = 0;
  std::size_t consumed = 0;
  bool keep_alive = false;
  std::string error;
  std::string body;

  bool operator==(const outcome&) const = default;
};

// `step` 0: the whole case in one piece.
outcome feed(const std::string& wire, std::size_t step, bool eof) {
  gateway::response_parser parser(body_limit, header_limit);
  outcome o;
  std::string pending;
  error_code ec;
  for (std::size_t at = 0; at < wire.size() && !parser.is_done();) {
    const auto n = step == 0 ? wire.size() : std::min(step, wire.size() - at);
    pending.append(wire, at, n);
    at += n;
    const auto used = parser.put(pending, ec);
    pending.erase(0, used);
    o.consumed += used;
    if (ec && ec != http::error::need_more) break;
    ec = {};
  }
  if (!ec && !parser.is_done() && eof) {
    if (parser.got_some()) {
      parser.put_eof(ec);
    } else {
      ec = http::error::end_of_stream;
    }
  }
  o.result = ec ? "error" : parser.is_done() ? "done" : "incomplete";
  o.error = error_name(ec);
  o.status = parser.status();
  o.keep_alive = parser.keep_alive();
  o.body = parser.body();
  return o;
}

std::string describe(const outcome& o) {
  std::ostringstream s;
  s << o.result << " " << o.status << " consumed " << o.consumed << " keep_alive " << o.keep_alive << " "
    << o.error << " body " << o.body.size() << " bytes";
  return s.str();
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    std::istringstream fields(line);
    std::string id, eof_flag, encoded;
    fields >> id >> eof_flag >> encoded;
    const auto wire = from_base64(encoded);
    if (id.empty() || (eof_flag != "0" && eof_flag != "1") || !wire) {
      std::cerr << "response_probe: malformed input line: " << line << "\n";
      return 2;
    }
    const bool eof = eof_flag == "1";
    const auto whole = feed(*wire, 0, eof);
    std::string result = whole.result;
    std::string detail;
    for (std::size_t step = 1; step <= 7 && detail.empty(); ++step) {
      if (const auto cut = feed(*wire, step, eof); !(cut == whole)) {
        result = "inconsistent";
        detail =
            "whole: " + describe(whole) + "; in pieces of " + std::to_string(step) + ": " + describe(cut);
      }
    }
    std::cout << "{\"id\": \"" << id << "\", \"result\": \"" << result << "\", \"status\": " << whole.status
              << ", \"consumed\": " << whole.consumed
              << ", \"keep_alive\": " << (whole.keep_alive ? "true" : "false") << ", \"error\": \""
              << whole.error << "\", \"body\": \"" << to_base64(whole.body) << "\", \"detail\": \"" << detail
              << "\"}\n";
  }
  return 0;
}
