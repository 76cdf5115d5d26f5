#pragma once
// An incremental, strict HTTP/1.1 response parser for downstream answers. Interim (1xx) responses are
// skipped: the answer is the final response that follows them. It keeps what a call needs (the
// status, the body, whether the connection may be reused) and looks at three header fields only
// (Content-Length, Transfer-Encoding, Connection); the others are checked for syntax and skipped. Bodies
// are framed by Content-Length, chunked transfer coding, or the end of the connection. Pure: bytes in,
// state out; errors are Beast's http::error codes (so callers treat them like Beast's parser's).
//
// put() consumes what it can and returns the count; the caller keeps the rest and presents it again with
// more bytes (a head, or a chunk-size line, is parsed only once complete). `ec` is http::error::need_more
// when more input is needed. Limits: the head (status line and fields) at most `header_limit` bytes, a
// chunk-size line or trailer section within it, the body at most `body_limit` bytes.

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gateway {

class response_parser {
 public:
  response_parser(std::size_t body_limit, std::size_t header_limit);

  std::size_t put(std::string_view data, boost::system::error_code& ec);
  // The connection ended: completes a body framed by the end of the connection, else partial_message.
  void put_eof(boost::system::error_code& ec);

  bool got_some() const { return got_some_; }
  bool is_done() const { return state_ == state::done; }
  bool keep_alive() const { return keep_alive_; }
  unsigned status() const { return status_; }
  std::string& body() { return body_; }

 private:
  enum class state { head, body_length, body_to_eof, chunk_size, chunk_data, chunk_crlf, trailers, done };

  std::size_t parse_head(std::string_view data, boost::system::error_code& ec);
  bool parse_status_line(std::string_view line);
  bool parse_field(const char*& p, const char* limit, boost::system::error_code& ec);
  std::size_t skip_interim(std::size_t head_size, boost::system::error_code& ec);
  std::size_t parse_chunk_size(std::string_view data, boost::system::error_code& ec);
  std::size_t parse_trailers(std::string_view data, boost::system::error_code& ec);
  bool append(std::string_view bytes, boost::system::error_code& ec);

  std::size_t body_limit_;
  std::size_t header_limit_;
  state state_ = state::head;
  std::size_t scanned_ = 0;  // bytes of the pending head already searched for its end
  static constexpr unsigned max_interim = 8;
  unsigned interim_ = 0;  // interim (1xx) responses skipped so far
  bool got_some_ = false;
  bool keep_alive_ = true;
  bool chunked_ = false;  // the last transfer coding is chunked
  bool te_seen_ = false;
  bool has_length_ = false;
  bool http10_ = false;
  bool connection_close_ = false;
  bool connection_keep_alive_ = false;
  unsigned status_ = 0;
  std::uint64_t length_ = 0;  // Content-Length, or what is left of it / of the current chunk
  std::string body_;
};

}  // namespace gateway
