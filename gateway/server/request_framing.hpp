#pragma once
// Checks of a parsed request's framing that Beast's parser leaves to its user, and the head's admission
// at the edge (admit_head). Pure functions; included by the session, the client I/O and the request-head
// fuzz target only (it brings in Beast's fields).

#include <boost/beast/http/message.hpp>

#include <cstddef>
#include <cstring>
#include <string_view>

namespace gateway {

// The answer owed to a request by its Transfer-Encoding fields (`present`: there is at least one;
// `codings`: their values joined by ", "), per RFC 9112 6.1 and 6.3: 0 when the framing is usable (no
// field, or chunked alone); 400 when the final coding is not chunked (the body length cannot be determined)
// or chunked appears twice or the list is empty or malformed; 501 when chunked is final but another coding
// (which the gateway does not decode) precedes it. Either error closes the connection: bytes after the head
// must never be read as another request.
unsigned transfer_coding_status(bool present, std::string_view codings);

// transfer_coding_status() of a parsed request's fields (every Transfer-Encoding field, joined as one list).
unsigned transfer_coding_status(const boost::beast::http::fields& fields);

// Why a request's header fields are refused (RFC 9112 3.2 and 6.3, RFC 9110 11.6.2), or "" when they are
// not: a Content-Length that is a list or repeated, even with equal values; a field name that a lenient
// server could read as a framing or routing field (Transfer_Encoding, Content--Length, host. : anything
// that is Content-Length, Transfer-Encoding, Host or Connection once case and every character but
// letters and digits are ignored, without being that name); no Host in an HTTP/1.1 request, or more than
// one, or one whose value is not a host and port; a repeated Authorization or Proxy-Authorization (not
// lists: joined they would be one credential nobody sent). Each gets 400, and the connection closes.
std::string_view field_refusal(const boost::beast::http::request_header<>& head);

// Admits a request's head at the edge: field_refusal(), then its target made canonical by
// core/request_target.hpp (in place: the routes, the parameters, a pass-through route's target, the access
// log and every later look see the canonical target; an absolute form's authority replaces Host). Returns
// why the request is refused (400), or "".
std::string_view admit_head(boost::beast::http::request_header<>& head);

// Watches the bytes of a request head as the parser takes them, for a field line folded into the one
// before (obs-fold, RFC 9112 5.2). A recipient may unfold it; a front door refuses it (400), since a server
// behind it, or a proxy beside it, may read the folded line as a field of its own.
class fold_watch {
 public:
  void taken(const char* bytes, std::size_t n) {
    if (n == 0) return;
    if (after_lf_ && (bytes[0] == ' ' || bytes[0] == '\t')) folded_ = true;
    const char* end = bytes + n;
    for (const char* p = bytes; (p = static_cast<const char*>(
                                     std::memchr(p, '\n', static_cast<std::size_t>(end - p)))) != nullptr;) {
      if (++p == end) break;
      if (*p == ' ' || *p == '\t') folded_ = true;
    }
    after_lf_ = bytes[n - 1] == '\n';
  }
  bool folded() const { return folded_; }

 private:
  bool after_lf_ = false;
  bool folded_ = false;
};

}  // namespace gateway
