#include "gateway/downstream/response_parser.hpp"


#include <boost/beast/http/error.hpp>

#include <algorithm>
#include <array>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace gateway {

namespace http = boost::beast::http;
using boost::system::error_code;

namespace {

constexpr std::size_t chunk_line_limit = 4096;  // a chunk-size line with its extensions

// RFC 9110 token characters, by byte.
constexpr auto tchar_table = [] {
  std::array<bool, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[static_cast<std::size_t>(c)] = true;
  for (int c = 'a'; c <= 'z'; ++c) t[static_cast<std::size_t>(c)] = true;
  for (int c = 'A'; c <= 'Z'; ++c) t[static_cast<std::size_t>(c)] = true;
  for (const char c : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(c)] = true;
  return t;
}();

// Field values and reason phrases: visible characters, spaces, tabs and obs-text; no other controls.
constexpr auto text_table = [] {
  std::array<bool, 256> t{};
  t['\t'] = true;
  for (int c = 0x20; c < 0x100; ++c) t[static_cast<std::size_t>(c)] = c != 0x7f;
  return t;
}();

bool is_text(std::string_view s) {
  for (const char c : s) {
    if (!text_table[static_cast<unsigned char>(c)]) return false;
  }
  return true;
}

// The usual characters of a field name (letters, digits, '-') and of a field value (anything but a
// control character) are skipped 16 at a time; the byte tables decide at the first other character.
// `limit`: the scans read no further than this.
#if defined(__SSE2__)
const char* skip_name_chars(const char* p, const char* limit) {
  const __m128i a = _mm_set1_epi8('a' - 1), z = _mm_set1_epi8('z' + 1);
  const __m128i zero = _mm_set1_epi8('0' - 1), nine = _mm_set1_epi8('9' + 1);
  const __m128i dash = _mm_set1_epi8('-'), lower = _mm_set1_epi8(0x20);
  while (limit - p >= 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i l = _mm_or_si128(x, lower);
    const __m128i ok =
        _mm_or_si128(_mm_or_si128(_mm_and_si128(_mm_cmpgt_epi8(l, a), _mm_cmplt_epi8(l, z)),
                                  _mm_and_si128(_mm_cmpgt_epi8(x, zero), _mm_cmplt_epi8(x, nine))),
                     _mm_cmpeq_epi8(x, dash));
    const unsigned bad = ~static_cast<unsigned>(_mm_movemask_epi8(ok)) & 0xFFFFu;
    if (bad != 0) return p + __builtin_ctz(bad);
    p += 16;
  }
  return p;
}

const char* skip_value_chars(const char* p, const char* limit) {
  const __m128i space = _mm_set1_epi8(0x20), minus_one = _mm_set1_epi8(-1), del = _mm_set1_epi8(0x7f);
  while (limit - p >= 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i control = _mm_and_si128(_mm_cmplt_epi8(x, space), _mm_cmpgt_epi8(x, minus_one));
    const unsigned bad =
        static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(control, _mm_cmpeq_epi8(x, del))));
    if (bad != 0) return p + __builtin_ctz(bad);
    p += 16;
  }
  return p;
}
#else
const char* skip_name_chars(const char* p, const char*) {
  return p;
}
const char* skip_value_chars(const char* p, const char*) {
  return p;
}
#endif

std::uint64_t load8(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// `a` (token characters) equals `lower` (lower-case letters and '-') without regard to case: for token
// characters, setting bit 0x20 lower-cases a letter and maps nothing else onto a letter or '-'. Eight
// bytes at a time (the last eight overlapping) when there are that many.
[[gnu::always_inline]] inline bool iequals(std::string_view a, std::string_view lower) {
  const std::size_t n = a.size();
  if (n != lower.size()) return false;
  if (n >= 8) {
    constexpr std::uint64_t bit = 0x2020202020202020u;
    for (std::size_t i = 0; i + 8 < n; i += 8) {
      if ((load8(a.data() + i) | bit) != load8(lower.data() + i)) return false;
    }
    return (load8(a.data() + n - 8) | bit) == load8(lower.data() + n - 8);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if ((static_cast<unsigned char>(a[i]) | 0x20) != static_cast<unsigned char>(lower[i])) return false;
  }
  return true;
}

// The offset of the first CR LF CR LF in `data` at or after `from`, or npos. Finds the CRs 16 bytes at a
// time and checks the three bytes after each.
std::size_t find_head_end(std::string_view data, std::size_t from) {
  const char* const base = data.data();
  std::size_t i = from;
#if defined(__SSE2__)
  const __m128i cr = _mm_set1_epi8('\r');
  for (; i + 16 + 3 <= data.size(); i += 16) {
    auto crs = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(base + i)), cr)));
    while (crs != 0) {
      const std::size_t at = i + static_cast<std::size_t>(__builtin_ctz(crs));
      if (base[at + 1] == '\n' && base[at + 2] == '\r' && base[at + 3] == '\n') return at;
      crs &= crs - 1;
    }
  }
#endif
  return data.find("\r\n\r\n", i);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Calls `fn(token)` for each element of a comma-separated list (empty elements skipped).
template <class Fn>
void for_each_token(std::string_view list, Fn fn) {
  while (!list.empty()) {
    const auto comma = list.find(',');
    const auto token = trim(list.substr(0, comma));
    if (!token.empty()) fn(token);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace

response_parser::response_parser(std::size_t body_limit, std::size_t header_limit)
    : body_limit_(body_limit), header_limit_(header_limit) {}

std::size_t response_parser::put(std::string_view data, error_code& ec) {
  ec = {};
  if (!data.empty()) got_some_ = true;
  std::size_t used = 0;
  while (state_ != state::done) {
    const auto rest = data.substr(used);
    std::size_t n = 0;
    switch (state_) {
      case state::head:
        n = parse_head(rest, ec);
        break;
      case state::chunk_size:
        n = parse_chunk_size(rest, ec);
        break;
      case state::trailers:
        n = parse_trailers(rest, ec);
        break;
      case state::body_length:
      case state::chunk_data:
        if (rest.empty()) {
          ec = http::error::need_more;
          break;
        }
        n = static_cast<std::size_t>(std::min<std::uint64_t>(length_, rest.size()));
        if (!append(rest.substr(0, n), ec)) break;
        length_ -= n;
        if (length_ == 0) state_ = state_ == state::body_length ? state::done : state::chunk_crlf;
        break;
      case state::body_to_eof:
        if (rest.empty()) {
          ec = http::error::need_more;
          break;
        }
        n = rest.size();
        append(rest, ec);
        break;
      case state::chunk_crlf:
        if (rest.size() < 2) {
          ec = http::error::need_more;
        } else if (rest.substr(0, 2) != "\r\n") {
          ec = http::error::bad_chunk;
        } else {
          n = 2;
          state_ = state::chunk_size;
        }
        break;
      case state::done:
        break;
    }
    if (ec) return used;
    used += n;
  }
  return used;
}

void response_parser::put_eof(error_code& ec) {
  ec = {};
  if (state_ == state::body_to_eof) {
    state_ = state::done;
  } else if (state_ != state::done) {
    ec = http::error::partial_message;
  }
}

// name ":" OWS value OWS CRLF, in one pass; `p` moves past the CRLF.
[[gnu::always_inline]] inline bool response_parser::parse_field(const char*& p, const char* limit,
                                                                error_code& ec) {
  const char* q = skip_name_chars(p, limit);
  while (tchar_table[static_cast<unsigned char>(*q)]) ++q;
  if (q == p || *q != ':') {
    ec = (*p == ' ' || *p == '\t') ? http::error::bad_obs_fold : http::error::bad_field;
    return false;
  }
  const std::string_view name(p, static_cast<std::size_t>(q - p));
  ++q;
  while (*q == ' ' || *q == '\t') ++q;
  const char* const value_start = q;
  for (;;) {
    q = skip_value_chars(q, limit);
    if (!text_table[static_cast<unsigned char>(*q)]) break;
    ++q;  // a tab, or the last few characters before `limit`
  }
  if (q[0] != '\r' || q[1] != '\n') {  // a control character, or a CR alone
    ec = http::error::bad_value;
    return false;
  }
  p = q + 2;
  while (q != value_start && (q[-1] == ' ' || q[-1] == '\t')) --q;
  const std::string_view value(value_start, static_cast<std::size_t>(q - value_start));
  // Only three names matter; their lengths differ, and most fields have another length.
  if (name.size() != 14 && name.size() != 17 && name.size() != 10) return true;
  if (iequals(name, "content-length")) {
    if (value.empty() || value.size() > 18 ||
        !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      ec = http::error::bad_content_length;
      return false;
    }
    std::uint64_t n = 0;
    for (const char c : value) n = n * 10 + static_cast<std::uint64_t>(c - '0');
    if (has_length_ && n != length_) {
      ec = http::error::multiple_content_length;
      return false;
    }
    has_length_ = true;
    length_ = n;
  } else if (iequals(name, "transfer-encoding")) {
    // The only coding decoded here is chunked, so the one acceptable value is one "chunked" in one field:
    // any other coding (gzip, or gzip applied before chunked) leaves a body that cannot be used, and a
    // final coding other than chunked leaves no length at all (RFC 9112 6.1, 6.3).
    if (te_seen_ || !iequals(value, "chunked")) {
      ec = http::error::bad_transfer_encoding;
      return false;
    }
    te_seen_ = true;
    chunked_ = true;
  } else if (iequals(name, "connection")) {
    if (iequals(value, "keep-alive")) {  // the usual value, without the list walk
      connection_keep_alive_ = true;
      return true;
    }
    for_each_token(value, [&](std::string_view option) {
      if (iequals(option, "close")) connection_close_ = true;
      if (iequals(option, "keep-alive")) connection_keep_alive_ = true;
    });
  }
  return true;
}

std::size_t response_parser::parse_head(std::string_view data, error_code& ec) {
  const auto end = find_head_end(data, scanned_ >= 3 ? scanned_ - 3 : 0);
  if (end == std::string_view::npos) {
    scanned_ = data.size();
    ec = data.size() > header_limit_ ? error_code(http::error::header_limit)
                                     : error_code(http::error::need_more);
    return 0;
  }
  if (end + 4 > header_limit_) {
    ec = http::error::header_limit;
    return 0;
  }
  // The head ends in CRLF CRLF, and CR is neither a token nor a text character: every scan below stops
  // at a CR inside the head, so none needs a bound of its own.
  const char* p = data.data();
  const char* const fields_end = p + end + 2;
  const char* eol = static_cast<const char*>(std::memchr(p, '\r', end + 2));
  if (eol[1] != '\n' || !parse_status_line(std::string_view(p, static_cast<std::size_t>(eol - p)))) {
    ec = http::error::bad_status;
    return 0;
  }
  p = eol + 2;
  while (p != fields_end) {
    // The scans may look past the head, into the body, for a 16-byte step: they stop at the field's CR.
    if (!parse_field(p, data.data() + data.size(), ec)) return 0;
  }
  if (te_seen_ && has_length_) {  // framing a downstream must not send: refuse rather than guess
    ec = http::error::bad_transfer_encoding;
    return 0;
  }
  if (status_ / 100 == 1) return skip_interim(end + 4, ec);
  // An HTTP/1.0 answer with Transfer-Encoding has faulty framing: close after it (RFC 9112 6.1).
  keep_alive_ = http10_ ? connection_keep_alive_ && !connection_close_ && !te_seen_ : !connection_close_;
  if (status_ == 204 || status_ == 304) {
    state_ = state::done;
  } else if (chunked_) {
    state_ = state::chunk_size;
  } else if (has_length_ && !te_seen_) {
    if (length_ > body_limit_) {
      ec = http::error::body_limit;
      return 0;
    }
    body_.reserve(static_cast<std::size_t>(length_));
    state_ = length_ == 0 ? state::done : state::body_length;
  } else {
    state_ = state::body_to_eof;
    keep_alive_ = false;
  }
  return end + 4;
}

// An interim response (RFC 9110 15.2) is skipped: the next head is the answer's. 101 is refused (the
// gateway never asks to switch protocols), and so is a run of interim responses longer than any server
// sends, so that a downstream cannot keep a call busy with them.
std::size_t response_parser::skip_interim(std::size_t head_size, error_code& ec) {
  if (status_ == 101 || ++interim_ > max_interim) {
    ec = http::error::bad_status;
    return 0;
  }
  status_ = 0;
  scanned_ = 0;
  te_seen_ = has_length_ = chunked_ = http10_ = connection_close_ = connection_keep_alive_ = false;
  length_ = 0;
  return head_size;
}

// HTTP/1.x SP 3DIGIT [SP reason-phrase]
bool response_parser::parse_status_line(std::string_view line) {
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || line[7] < '0' || line[7] > '9' ||
      line[8] != ' ') {
    return false;
  }
  http10_ = line[7] == '0';
  unsigned code = 0;
  for (std::size_t i = 9; i < 12; ++i) {
    if (line[i] < '0' || line[i] > '9') return false;
    code = code * 10 + static_cast<unsigned>(line[i] - '0');
  }
  if (code < 100) return false;
  if (line.size() > 12 && (line[12] != ' ' || !is_text(line.substr(13)))) return false;
  status_ = code;
  return true;
}

// chunk-size [ chunk-ext ] CRLF, with the extensions checked for characters and skipped.
std::size_t response_parser::parse_chunk_size(std::string_view data, error_code& ec) {
  const auto eol = data.find("\r\n");
  if (eol == std::string_view::npos) {
    ec = data.size() > chunk_line_limit ? error_code(http::error::bad_chunk)
                                        : error_code(http::error::need_more);
    return 0;
  }
  const auto line = data.substr(0, eol);
  std::uint64_t size = 0;
  std::size_t i = 0;
  for (; i < line.size(); ++i) {
    const char c = line[i];
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (digit < 0) break;
    if (i >= 15) {  // more than 2^60 bytes: no body limit allows it
      ec = http::error::bad_chunk;
      return 0;
    }
    size = size * 16 + static_cast<std::uint64_t>(digit);
  }
  const auto ext = trim(line.substr(i));
  if (i == 0 || eol > chunk_line_limit || (!ext.empty() && (ext[0] != ';' || !is_text(ext)))) {
    ec = ext.empty() || ext[0] != ';' || i == 0 ? http::error::bad_chunk : http::error::bad_chunk_extension;
    return 0;
  }
  if (size > body_limit_ - std::min(body_limit_, body_.size())) {
    ec = http::error::body_limit;
    return 0;
  }
  length_ = size;
  state_ = size == 0 ? state::trailers : state::chunk_data;
  return eol + 2;
}

// The trailer section after the last chunk: fields, each checked like a head's field (name ":" value
// CRLF; no bare LF, no obs-fold, no control characters) and skipped, up to the empty line. Like the head,
// the section is consumed only once complete (and within the head limit), so that where an answer ends
// never depends on how its bytes arrived.
std::size_t response_parser::parse_trailers(std::string_view data, error_code& ec) {
  std::size_t used = 0;
  for (;;) {
    const auto rest = data.substr(used);
    if (rest.size() >= 2 && rest[0] == '\r' && rest[1] == '\n') {
      state_ = state::done;
      return used + 2;
    }
    const auto eol = rest.find("\r\n");
    if (eol == std::string_view::npos) {  // a line still arriving is judged once complete
      ec = used + rest.size() > header_limit_ ? error_code(http::error::header_limit)
                                              : error_code(http::error::need_more);
      return 0;
    }
    const auto line = rest.substr(0, eol);
    std::size_t name_end = 0;
    while (name_end < line.size() && tchar_table[static_cast<unsigned char>(line[name_end])]) ++name_end;
    // Not a field (obs-fold, a bare LF, no colon) or a value with control characters.
    if (name_end == 0 || name_end == line.size() || line[name_end] != ':' ||
        !is_text(line.substr(name_end + 1))) {
      ec = line[0] == ' ' || line[0] == '\t' ? http::error::bad_obs_fold : http::error::bad_field;
      return 0;
    }
    used += eol + 2;
    if (used > header_limit_) {
      ec = http::error::header_limit;
      return 0;
    }
  }
}

bool response_parser::append(std::string_view bytes, error_code& ec) {
  if (bytes.size() > body_limit_ - std::min(body_limit_, body_.size())) {
    ec = http::error::body_limit;
    return false;
  }
  body_.append(bytes);
  return true;
}

}  // namespace gateway
