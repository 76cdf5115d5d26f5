#pragma once
// An incremental, strict HTTP/1.1 response parser for downstream answers, built on Beast's basic_parser.
// Interim (1xx) responses are skipped: the answer is the final response that follows them. It keeps what
// a call needs (the status, the body and its content coding, whether the connection may be reused, what
// Cache-Control and Vary say about sharing it, the fields a capture names). Beast checks the syntax; what
// it leaves out (obs-fold, one `chunked` as the only transfer coding, Content-Length as one number, the
// size of chunk-size lines and trailer sections) is checked here, and the few forms it refuses that this
// parser accepts (no reason phrase, HTTP/1.2 to 1.9, whitespace or free text in chunk extensions) are
// handed to it rewritten. Bodies are framed by Content-Length, chunked transfer coding, or the end of the
// connection. Pure: bytes in, state out; errors are Beast's http::error codes.
//
// put() consumes what it can and returns the count; the caller keeps the rest and presents it again with
// more bytes (a head, a chunk-size line, or the last chunk with its trailer section, is consumed only once
// complete). `ec` is http::error::need_more when more input is needed; after any other error the parser
// has failed, and nothing more may be put (asserted). Limits: the head (status line and fields) at most
// `header_limit` bytes, a chunk-size line at most 4096 and a trailer section within `header_limit`, the
// body at most `body_limit`. Not movable: the Beast parser inside refers back to it.

#include "gateway/codec/content_coding.hpp"

#include <boost/beast/http/basic_parser.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gateway {

struct response_header_policy;
struct passed_answer_policy;

// Which fields of an answer's head the parser keeps: for a status `pass` lists, those its `fields` name;
// for any other, those `fields` names (the caller uses them for a 2xx only). Null: none. What they point
// to must outlive the parser.
struct answer_capture {
  const response_header_policy* fields = nullptr;
  const passed_answer_policy* pass = nullptr;
};

class response_parser {
 public:
  response_parser(std::size_t body_limit, std::size_t header_limit);
  response_parser(const response_parser&) = delete;
  response_parser& operator=(const response_parser&) = delete;

  std::size_t put(std::string_view data, boost::system::error_code& ec);
  // The connection ended: completes a body framed by the end of the connection, else partial_message.
  void put_eof(boost::system::error_code& ec);

  // Bytes of the answer have arrived (put() was given some): a connection that ends before any is told
  // from one that cuts an answer.
  bool got_some() const { return state_ != state::awaiting; }
  bool is_done() const { return state_ == state::done; }
  bool keep_alive() const { return keep_alive_; }
  unsigned status() const { return status_; }
  // Seconds the answer may be kept by a shared cache (its Cache-Control fields); 0: not at all.
  std::uint32_t fresh_for() const { return fresh_for_.value_or(0); }
  // The body's Content-Encoding; unknown for a coding not decoded here, several codings or several fields.
  // The body is kept as received: the caller decodes it.
  content_coding coding() const { return coding_; }
  std::string& body() { return body_; }

  // Keeps the fields `keep` names (see answer_capture).
  void capture(const answer_capture& keep) {
    keep_ = keep;
    capture_ = keep.fields;
  }
  // The final head's kept fields, "Name: value\r\n" each, in the order received.
  std::string& captured() { return captured_; }
  // The kept fields hold a Set-Cookie.
  bool captured_cookie() const { return captured_cookie_; }
  // False when a Vary field makes the answer unfit to share under its key (varies_beyond_key()).
  bool shareable() const { return shareable_; }

 private:
  // Where the answer is. Transitions: legal(), enter(). Before the final head, `reader_` has been given
  // nothing (a head goes to it only once complete); from `body` on it holds the final head.
  enum class state : std::uint8_t {
    awaiting,  // nothing received yet (a put_eof() now fails without leaving it: got_some() stays false)
    head,      // a head is arriving: the answer's, or the one after an interim (1xx) response
    body,      // the final head is parsed: its body is arriving (by Content-Length, to the end of the
               // connection, or chunked, up to the first chunk with data)
    chunks,    // chunked: past the size line of a chunk with data: its data (chunk_left_: what is still
               // to come of it), then a CRLF before each next chunk-size line
    trailers,  // chunked: Beast has taken the last chunk and is parsing the trailer section after it
               // (trailers_), within one feed(): the same put() ends it, done or failed
    done,      // the answer is complete; put() consumes nothing more
    failed,    // put() or put_eof() reported an error other than need_more; nothing more may be put
  };

  // Beast's parser for one message (a new one for each head: Beast ends a message at an interim
  // response); its callbacks report to the response_parser that owns it.
  class reader final : public boost::beast::http::basic_parser<false> {
   public:
    explicit reader(response_parser& owner) : owner_(owner) {}

   private:
    using string_view = boost::beast::string_view;
    void on_request_impl(boost::beast::http::verb, string_view, string_view, int,
                         boost::system::error_code&) override {}
    void on_response_impl(int code, string_view, int version, boost::system::error_code& ec) override;
    void on_field_impl(boost::beast::http::field f, string_view name, string_view value,
                       boost::system::error_code& ec) override;
    void on_header_impl(boost::system::error_code&) override {}
    void on_body_init_impl(const boost::optional<std::uint64_t>&, boost::system::error_code&) override {}
    std::size_t on_body_impl(string_view body, boost::system::error_code& ec) override;
    void on_chunk_header_impl(std::uint64_t size, string_view extensions,
                              boost::system::error_code& ec) override;
    std::size_t on_chunk_body_impl(std::uint64_t remain, string_view body,
                                   boost::system::error_code& ec) override;
    void on_finish_impl(boost::system::error_code&) override {}

    response_parser& owner_;
  };

  static constexpr bool legal(state from, state to);
  void enter(state next);
  void start_message();
  std::size_t put_head(std::string_view data, boost::system::error_code& ec);
  bool finish_head(boost::system::error_code& ec);
  std::size_t put_body(std::string_view data, boost::system::error_code& ec);
  std::size_t put_chunk_line(std::string_view data, boost::system::error_code& ec);
  std::size_t feed(std::string_view data, boost::system::error_code& ec);
  bool append(std::string_view bytes, boost::system::error_code& ec);

  std::size_t body_limit_;
  std::size_t header_limit_;
  std::optional<reader> reader_;
  // The start of the bytes the reader is parsing (the views its callbacks are given lie in them).
  const char* fed_ = nullptr;
  std::size_t scanned_ = 0;  // bytes of the pending head already searched for its end
  static constexpr unsigned max_interim = 8;
  state state_ = state::awaiting;
  unsigned interim_ = 0;  // interim (1xx) responses skipped so far
  // Facts of the head being parsed (from `body` on, of the final one).
  bool keep_alive_ = true;  // the connection may be reused after the answer (set from the final head)
  bool http10_ = false;
  bool connection_close_ = false;  // a Connection field lists close
  bool connection_keep_alive_ = false;
  unsigned status_ = 0;
  std::optional<std::uint32_t> fresh_for_;  // from Cache-Control; several fields: the shortest
  content_coding coding_ = content_coding::identity;
  bool coding_seen_ = false;  // a Content-Encoding field was read

  std::uint64_t chunk_left_ = 0;  // chunks: bytes of the current chunk's data still to come
  bool copied_line_ = false;  // during one feed(): Beast is given a chunk-size line put_chunk_line checked
  // trailers: the start of the trailer section, in the bytes being fed.
  const char* trailers_ = nullptr;
  std::string body_;
  answer_capture keep_;
  const response_header_policy* capture_ = nullptr;  // the current head's: keep_.fields or keep_.pass's
  std::string captured_;
  bool captured_cookie_ = false;
  bool shareable_ = true;
};

}  // namespace gateway
