// One file of ~450 lines, over the usual size: Beast's callbacks, the checks Beast leaves out and the
// rewrites of forms Beast refuses all work on the same parser state and the same buffered bytes; apart,
// that state would have to be exposed between files.

#include "gateway/downstream/response_parser.hpp"

#include "gateway/codec/char_class.hpp"
#include "gateway/codec/http_text.hpp"
#include "gateway/downstream/answer_fields.hpp"
#include "gateway/downstream/freshness.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/rfc7230.hpp>

#include <algorithm>
#include <array>
#include <cassert>
#include <limits>

namespace gateway {

namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;

namespace {

constexpr std::size_t chunk_line_limit = 4096;  // a chunk-size line with its extensions

bool is_text(std::string_view s) {
  return char_class::all_of(s, char_class::field_text);
}

// The hex digits at the start of `s`.
std::size_t hex_digits(std::string_view s) {
  return static_cast<std::size_t>(
      boost::urls::grammar::find_if_not(s.data(), s.data() + s.size(), char_class::hexdig) - s.data());
}

// HTTP/1.x SP 3DIGIT [SP reason-phrase]. Beast also wants the SP before an empty reason phrase and a minor
// version of 0 or 1; a line it refuses is judged by this rule.
bool parse_status_line(std::string_view line, unsigned& code, bool& http10) {
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || line[7] < '0' || line[7] > '9' ||
      line[8] != ' ') {
    return false;
  }
  code = 0;
  for (std::size_t i = 9; i < 12; ++i) {
    if (line[i] < '0' || line[i] > '9') return false;
    code = code * 10 + static_cast<unsigned>(line[i] - '0');
  }
  if (code < 100) return false;
  if (line.size() > 12 && (line[12] != ' ' || !is_text(line.substr(13)))) return false;
  http10 = line[7] == '0';
  return true;
}

// A chunk-size line without its CRLF: 1 to 15 hex digits (more is beyond any body limit), then extensions
// checked for characters only (whitespace before the CRLF allowed), 4096 bytes in all. Beast wants
// extensions in their exact grammar, and its own line has no length limit.
error_code check_chunk_line(std::string_view line) {
  if (line.find('\r') != std::string_view::npos) return http::error::bad_line_ending;  // as Beast has it
  const auto digits = hex_digits(line);
  if (digits == 0 || digits > 15 || line.size() > chunk_line_limit) return http::error::bad_chunk;
  const auto ext = trim_ows(line.substr(digits));
  if (!ext.empty() && ext[0] != ';') return http::error::bad_chunk;
  if (!is_text(ext)) return http::error::bad_chunk_extension;
  return {};
}

// The field line at the start of `s` is followed by a continuation line (obs-fold).
bool continued(std::string_view s) {
  const auto eol = s.find("\r\n");
  return eol != std::string_view::npos && eol + 2 < s.size() && (s[eol + 2] == ' ' || s[eol + 2] == '\t');
}

// A line ended by LF alone.
bool has_bare_lf(std::string_view s) {
  for (auto at = s.find('\n'); at != std::string_view::npos; at = s.find('\n', at + 1)) {
    if (at == 0 || s[at - 1] != '\r') return true;
  }
  return false;
}

}  // namespace

response_parser::response_parser(std::size_t body_limit, std::size_t header_limit)
    : body_limit_(body_limit), header_limit_(header_limit) {
  start_message();
}

// The legal changes of state; any other is a bug:
//   awaiting -> head (the first byte)
//   head     -> head (an interim response skipped) | body | done (a final head without a body) | failed
//   body     -> chunks (a chunk with data) | trailers (a last chunk first) | done | failed
//   chunks   -> chunks (the next chunk) | trailers | failed
//   trailers -> done | failed
//   done, failed -> none
constexpr bool response_parser::legal(state from, state to) {
  switch (from) {
    case state::awaiting:
      return to == state::head;
    case state::head:
      return to == state::head || to == state::body || to == state::done || to == state::failed;
    case state::body:
      return to == state::chunks || to == state::trailers || to == state::done || to == state::failed;
    case state::chunks:
      return to == state::chunks || to == state::trailers || to == state::failed;
    case state::trailers:
      return to == state::done || to == state::failed;
    case state::done:
    case state::failed:
      return false;
  }
  return false;
}

// The one place the state changes (asserting that the change is legal()).
void response_parser::enter(state next) {
  assert(legal(state_, next));
  state_ = next;
}

// A new Beast parser for the next head. Beast's body limit is off: the limit is counted here, because a
// chunk-size line Beast refuses is given to it again (put_chunk_line) and Beast would count it twice.
void response_parser::start_message() {
  reader_.emplace(*this);
  reader_->header_limit(std::numeric_limits<std::uint32_t>::max());  // the head's size is checked here
  reader_->body_limit(boost::none);
  reader_->eager(true);  // on through the body's states as far as the bytes go
  status_ = 0;
  http10_ = connection_close_ = connection_keep_alive_ = coding_seen_ = false;
  fresh_for_.reset();
  coding_ = content_coding::identity;
  captured_.clear();  // an interim response's fields are not the answer's
  captured_cookie_ = false;
  shareable_ = true;
}

std::size_t response_parser::put(std::string_view data, error_code& ec) {
  assert(state_ != state::failed && "put() after an error");
  ec = {};
  if (state_ == state::awaiting) {
    if (data.empty()) {
      ec = http::error::need_more;
      return 0;
    }
    enter(state::head);
  }
  std::size_t used = 0;
  while (state_ != state::done) {
    const auto rest = data.substr(used);
    used += state_ == state::head ? put_head(rest, ec) : put_body(rest, ec);
    if (ec) break;
  }
  if (ec && ec != http::error::need_more) enter(state::failed);
  return used;
}

void response_parser::put_eof(error_code& ec) {
  assert(state_ != state::failed && "put_eof() after an error");
  ec = {};
  switch (state_) {
    case state::done:
      return;
    case state::awaiting:  // no answer at all: nothing to fail (got_some() stays false)
      ec = http::error::partial_message;
      return;
    case state::head:  // nothing of the final response given to Beast yet
      ec = http::error::partial_message;
      return enter(state::failed);
    default:
      reader_->put_eof(ec);  // completes a body framed by the end of the connection only
      return enter(ec ? state::failed : state::done);
  }
}

std::size_t response_parser::feed(std::string_view data, error_code& ec) {
  fed_ = data.data();
  return reader_->put(boost::asio::const_buffer(data.data(), data.size()), ec);
}

// `data` starts at a head. Beast is given a head only once it is complete: it parses a head as its bytes
// arrive, but then judges an incomplete one (its status, its errors) by how they were cut.
std::size_t response_parser::put_head(std::string_view data, error_code& ec) {
  const auto end = data.find("\r\n\r\n", scanned_ >= 3 ? scanned_ - 3 : 0);
  if (end == std::string_view::npos) {
    scanned_ = data.size();
    ec = data.size() > header_limit_ ? error_code(http::error::header_limit)
                                     : error_code(http::error::need_more);
    return 0;
  }
  scanned_ = 0;
  const auto head = data.substr(0, end + 4);
  if (head.size() > header_limit_) {
    ec = http::error::header_limit;
    return 0;
  }
  auto fed = head;
  auto n = feed(head, ec);
  if (ec && status_ == 0) {
    // Beast refused the status line. A line the rule above accepts (no reason phrase, HTTP/1.2 to 1.9) is
    // given to a new Beast parser in the form Beast accepts, then the fields.
    const auto eol = head.find("\r\n");
    unsigned code = 0;
    bool http10 = false;
    if (!parse_status_line(head.substr(0, eol), code, http10)) {
      ec = http::error::bad_status;
      return 0;
    }
    char line[] = "HTTP/1.1 000 \r\n";
    line[7] = http10 ? '0' : '1';
    line[9] = static_cast<char>('0' + code / 100);
    line[10] = static_cast<char>('0' + code / 10 % 10);
    line[11] = static_cast<char>('0' + code % 10);
    start_message();
    feed(std::string_view(line, sizeof line - 1), ec);
    fed = head.substr(eol + 2);
    n = ec == http::error::need_more ? feed(fed, ec) : 0;
  }
  if (ec) {
    if (ec == http::error::need_more) {
      ec = http::error::bad_field;  // (Beast has the whole head: not expected)
    } else if (continued(fed.substr(n))) {
      ec = http::error::bad_obs_fold;  // a folded field Beast refuses (its joined value as a list, a number)
    } else if (ec == http::error::bad_content_length && reader_->chunked()) {
      ec = http::error::bad_transfer_encoding;  // Beast's error for Content-Length after Transfer-Encoding
    }
    return 0;
  }
  return finish_head(ec) ? head.size() : 0;
}

// The head is complete and within the limit.
bool response_parser::finish_head(error_code& ec) {
  if (status_ / 100 == 1) {
    // An interim response (RFC 9110 15.2) is skipped: the next head is the answer's. 101 is refused (the
    // gateway never asks to switch protocols), and so is a run of interim responses longer than any server
    // sends, so that a downstream cannot keep a call busy with them.
    if (status_ == 101 || ++interim_ > max_interim) {
      ec = http::error::bad_status;
      return false;
    }
    start_message();
    enter(state::head);
    return true;
  }
  // An HTTP/1.0 answer with Transfer-Encoding has faulty framing: close after it (RFC 9112 6.1). (Beast's
  // keep_alive() would also heed Proxy-Connection, and keep-alive over close in HTTP/1.0.)
  keep_alive_ = !connection_close_ && !reader_->need_eof() &&
                (!http10_ || (connection_keep_alive_ && !reader_->chunked()));
  if (status_ != 204 && status_ != 304) {
    if (const auto length = reader_->content_length()) {
      if (*length > body_limit_) {
        ec = http::error::body_limit;
        return false;
      }
      body_.reserve(static_cast<std::size_t>(*length));
    }
  }
  enter(reader_->is_done() ? state::done : state::body);
  return true;
}

std::size_t response_parser::put_body(std::string_view data, error_code& ec) {
  std::size_t n = 0;
  if (state_ == state::body && reader_->chunked() && data.size() < 5) {
    // Beast 1.81 asserts that it has 5 bytes at a chunk-size line once it has seen a last chunk of 3
    // ("0\r\n" as the first chunk; boostorg/beast pull request 2861): fewer are judged here.
    n = put_chunk_line(data, ec);
  } else {
    n = feed(data, ec);
    if ((!ec || ec == http::error::need_more) && !reader_->is_done()) {
      ec = http::error::need_more;
      if (reader_->chunked() && chunk_left_ == 0 && n < data.size()) n += put_chunk_line(data.substr(n), ec);
    } else if (ec == http::error::bad_chunk_extension) {
      n += put_chunk_line(data.substr(n), ec);
    }
  }
  // A trailer section Beast refuses is a bad field (as a line not a field, whatever Beast's reason).
  if (ec && ec != http::error::need_more && state_ == state::trailers && ec != http::error::header_limit &&
      ec != http::error::bad_obs_fold) {
    ec = http::error::bad_field;
  }
  if (!ec && reader_->is_done()) enter(state::done);
  return n;
}

// `data` starts at a chunk-size line (in state chunks, at the CRLF ending the previous chunk's data, which
// Beast takes with the line), and Beast either refused the line's extensions, waits for more of the line or
// of the trailer section, or waits on an extension it cannot end (an open quote); or it is the first line,
// in fewer than 5 bytes, not yet given to Beast (put_body()). Judges what Beast leaves unbounded: the line's
// length, the trailer section's size and bare LFs in it (which must not let it run into the next response). A
// complete line the rule accepts is given to Beast with its extensions turned into leading zeros: the same
// length, so that Beast's offsets into it still hold. Returns what Beast consumed of it.
std::size_t response_parser::put_chunk_line(std::string_view data, error_code& ec) {
  std::size_t at = 0;
  if (state_ == state::chunks) {
    if (data.size() < 2) {
      ec = http::error::need_more;
      return 0;
    }
    if (data.substr(0, 2) != "\r\n") {
      ec = http::error::bad_chunk;
      return 0;
    }
    at = 2;
  }
  const auto eol = data.find("\r\n", at);
  if (eol == std::string_view::npos) {  // (the 1: a CR whose LF is on its way)
    ec = data.size() - at > chunk_line_limit + 1 ? error_code(http::error::bad_chunk)
                                                 : error_code(http::error::need_more);
    return 0;
  }
  const auto line = data.substr(at, eol - at);
  if ((ec = check_chunk_line(line))) return 0;
  const auto digits = hex_digits(line);
  auto end = eol + 2;
  if (line.substr(0, digits).find_first_not_of('0') == std::string_view::npos) {
    // The last chunk: Beast takes it together with the trailer section.
    const auto section_end = data.find("\r\n\r\n", eol);
    if (section_end == std::string_view::npos) {
      const auto trailers = data.substr(end);
      ec = trailers.size() > header_limit_ + 1 ? error_code(http::error::header_limit)
           : has_bare_lf(trailers)             ? error_code(http::error::bad_field)
                                               : error_code(http::error::need_more);
      return 0;
    }
    end = section_end + 4;
  }
  std::string copy(data.substr(0, end));
  std::fill(copy.begin() + static_cast<std::ptrdiff_t>(at), copy.begin() + static_cast<std::ptrdiff_t>(eol),
            '0');
  line.copy(copy.data() + eol - digits, digits);
  copied_line_ = true;
  const auto n = feed(copy, ec);
  copied_line_ = false;
  if (!ec && n != copy.size()) ec = http::error::bad_chunk;  // (Beast takes a line it accepts whole)
  return ec ? 0 : n;
}

bool response_parser::append(std::string_view bytes, error_code& ec) {
  if (bytes.size() > body_limit_ - std::min(body_limit_, body_.size())) {
    ec = http::error::body_limit;
    return false;
  }
  body_.append(bytes);
  return true;
}

void response_parser::reader::on_response_impl(int code, string_view, int version, error_code& ec) {
  if (code < 100) {
    ec = http::error::bad_status;
    return;
  }
  owner_.status_ = static_cast<unsigned>(code);
  owner_.http10_ = version == 10;
  // The status is known before the fields: an answer the call passes keeps the fields named for it.
  if (const auto* pass = owner_.keep_.pass) {
    owner_.capture_ = pass->passes(owner_.status_) ? &pass->fields : owner_.keep_.fields;
  }
}

void response_parser::reader::on_field_impl(http::field f, string_view name, string_view value,
                                            error_code& ec) {
  auto& o = owner_;
  // obs-fold (RFC 9112 5.2: a gateway may refuse it). Beast joins a field's continuation lines into a copy;
  // the value of a field on one line is where the line has it, after the colon and any whitespace.
  const char* start = name.data() + name.size() + 1;
  while (*start == ' ' || *start == '\t') ++start;
  if (value.data() != start) {
    ec = http::error::bad_obs_fold;
    return;
  }
  if (o.state_ == response_parser::state::trailers) {
    // Trailer fields are skipped; their lines count against the head limit.
    const char* end = value.data() + value.size();
    while (*end == ' ' || *end == '\t') ++end;
    if (static_cast<std::size_t>(end + 2 - o.trailers_) > o.header_limit_) ec = http::error::header_limit;
    return;
  }
  // Fields kept for the client's answer: only with a capture policy (most calls have none).
  if (o.capture_) {
    const auto kept = o.captured_.size();
    keep_answer_field(*o.capture_, std::string_view(name.data(), name.size()),
                      std::string_view(value.data(), value.size()), o.captured_);
    if (f == http::field::set_cookie && o.captured_.size() != kept) o.captured_cookie_ = true;
  }
  switch (f) {
    case http::field::content_length:
      // Beast takes a list of equal numbers ("7, 7") and any number of digits; one number per field here.
      if (value.empty() || value.size() > 18 ||
          !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        ec = http::error::bad_content_length;
      }
      break;
    case http::field::transfer_encoding:
      // The only coding decoded here is chunked, so the one acceptable value is one "chunked" in one field
      // (Beast refuses a second field): any other coding (gzip, or gzip applied before chunked) leaves a
      // body that cannot be used, and a final coding other than chunked leaves no length at all (RFC 9112
      // 6.1, 6.3); Beast would read such a body to the end of the connection.
      if (!beast::iequals(value, "chunked")) ec = http::error::bad_transfer_encoding;
      break;
    case http::field::cache_control:
      if (const auto seconds = freshness_seconds(std::string_view(value.data(), value.size()))) {
        o.fresh_for_ = std::min(o.fresh_for_.value_or(*seconds), *seconds);
      }
      break;
    case http::field::vary:
      if (varies_beyond_key(std::string_view(value.data(), value.size()))) o.shareable_ = false;
      break;
    case http::field::content_encoding:
      // A second field would layer codings (RFC 9110 8.4): not decoded here.
      o.coding_ = o.coding_seen_ ? content_coding::unknown
                                 : parse_content_coding(std::string_view(value.data(), value.size()));
      o.coding_seen_ = true;
      break;
    case http::field::connection:
      if (value.size() == 10 && beast::iequals(value, "keep-alive")) {  // the usual value, no list to walk
        o.connection_keep_alive_ = true;
        break;
      }
      for (const auto option : http::opt_token_list{value}) {
        if (beast::iequals(option, "close")) o.connection_close_ = true;
        if (beast::iequals(option, "keep-alive")) o.connection_keep_alive_ = true;
      }
      break;
    default:
      break;
  }
}

std::size_t response_parser::reader::on_body_impl(string_view body, error_code& ec) {
  return owner_.append(std::string_view(body.data(), body.size()), ec) ? body.size() : 0;
}

void response_parser::reader::on_chunk_header_impl(std::uint64_t size, string_view extensions,
                                                   error_code& ec) {
  auto& o = owner_;
  // The line's hex digits lie just before its extensions, in the bytes fed.
  const char* begin = extensions.data();
  while (begin != o.fed_ && char_class::hexdig(begin[-1])) --begin;
  const std::string_view line(begin, static_cast<std::size_t>(extensions.data() + extensions.size() - begin));
  if (!o.copied_line_ && (ec = check_chunk_line(line))) return;
  if (size == 0) {
    o.trailers_ = line.data() + line.size() + 2;
    o.enter(response_parser::state::trailers);
    return;
  }
  if (size > o.body_limit_ - std::min(o.body_limit_, o.body_.size())) {
    ec = http::error::body_limit;
    return;
  }
  o.chunk_left_ = size;
  o.enter(response_parser::state::chunks);
}

std::size_t response_parser::reader::on_chunk_body_impl(std::uint64_t remain, string_view body,
                                                        error_code& ec) {
  if (!owner_.append(std::string_view(body.data(), body.size()), ec)) return 0;
  owner_.chunk_left_ = remain - body.size();
  return body.size();
}

}  // namespace gateway
