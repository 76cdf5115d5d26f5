#include "gateway/server/proxy_exchange.hpp"

#include "gateway/codec/char_class.hpp"
#include "gateway/codec/http_text.hpp"
#include "gateway/codec/owned_fields.hpp"
#include "gateway/downstream/call_headers.hpp"
#include "gateway/downstream/failure_rule.hpp"
#include "gateway/downstream/http_result.hpp"
#include "gateway/downstream/request_head.hpp"
#include "gateway/server/beast_headers.hpp"
#include "gateway/server/edge_gate.hpp"
#include "gateway/server/request_framing.hpp"
#include "gateway/server/router.hpp"
#include "gateway/server/tls_client_io.hpp"
#include "gateway/trace/span_attributes.hpp"

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

namespace gateway {

namespace http = boost::beast::http;
using boost::system::error_code;

namespace {

std::string_view view(boost::beast::string_view s) {
  return {s.data(), s.size()};
}

template <class Fields>
bool hop_by_hop(const Fields& fields, std::string_view name) {
  return listed_ci(name, hop_by_hop_fields) || named_by_connection(fields, name);
}

// Client fields the gateway writes itself on a pass-through request (or, for Expect, answers itself).
constexpr std::string_view own_request_fields[] = {"host", "expect", "x-request-id"};

// Whether a client's identity field (core/owned_fields.hpp) is dropped: always from a peer that is not a
// trusted proxy, whatever server.forwarded says; from a trusted one, those the forwarded style rewrites.
bool identity_dropped(std::string_view name, const client_origin& origin, bool forwards) {
  if (!identity_field(name)) return false;
  return !origin.trusted || (forwards && listed_ci(name, forwarded_style_fields));
}

// The client waits for a 100 Continue before it sends its body (RFC 9110 10.1.1).
template <class Request>
bool expects_continue(const Request& req) {
  return req.version() >= 11 && iequals(view(req[http::field::expect]), "100-continue");
}

bool idempotent(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "OPTIONS" || method == "PUT" ||
         method == "DELETE" || method == "TRACE";
}

void append_hex(std::string& out, std::size_t n) {
  std::array<char, 16> digits{};
  const auto end = std::to_chars(digits.data(), digits.data() + digits.size(), n, 16).ptr;
  out.append(digits.data(), end);
}

// Cuts a body read through a fixed buffer into pieces the other side gets with its own framing.
class body_framing {
 public:
  explicit body_framing(bool chunked) : chunked_(chunked) {}
  // The bytes to write before a piece of `n` bytes (a chunk's size line, after the last chunk's CRLF).
  std::string_view before(std::size_t n) {
    prefix_.clear();
    if (!chunked_) return prefix_;
    if (any_) prefix_ += "\r\n";
    append_hex(prefix_, n);
    prefix_ += "\r\n";
    any_ = true;
    return prefix_;
  }
  // What ends the body (the last chunk); empty without chunks.
  std::string_view end() {
    prefix_.clear();
    if (!chunked_) return prefix_;
    if (any_) prefix_ += "\r\n";
    prefix_ += "0\r\n\r\n";
    return prefix_;
  }

 private:
  bool chunked_;
  bool any_ = false;
  std::string prefix_;
};

// The exchange's state shared by its steps.
template <class Io>
class exchange {
 public:
  exchange(Io& io, const config_generation& generation, int route_index, const session_context& ctx,
           request_control& control, trace_record* trace, const edge_pass* pass,
           boost::asio::yield_context yield)
      : io_(io),
        route_(generation.config->routes[static_cast<std::size_t>(route_index)]),
        settings_(*route_.proxy()),
        to_(generation.config->downstreams[settings_.downstream_index]),
        route_index_(route_index),
        target_(generation.handler->proxy_target(route_index)),
        series_(generation.metrics),
        ctx_(ctx),
        control_(control),
        trace_(trace),
        gate_(generation.gate(route_index)),
        pass_(pass),
        yield_(yield),
        buffer_(std::max<std::size_t>(settings_.buffer_bytes, 2048)) {
    control_.attach(&cancel_);
  }
  ~exchange() { control_.detach(); }

  proxy_result run(http::request_parser<http::string_body>& head_parser, const client_origin& origin);

 private:
  using clock_point = clock::time_point;
  clock_point idle_deadline() const { return clock::now() + settings_.idle_timeout; }
  // A wait of the request's way to the downstream (its body read or written): within idle_timeout, and
  // within proxy.timeout of the request's start, which bounds the whole upload.
  clock_point upload_deadline() const { return std::min(idle_deadline(), due_); }
  // The body pieces are read into the buffer's second half.
  char* body_room() { return buffer_.data() + buffer_.size() / 2; }
  std::size_t body_room_size() const { return buffer_.size() - buffer_.size() / 2; }
  std::string request_head(const http::request<http::buffer_body>& req, const client_headers& client,
                           const client_origin& origin, bool has_body, bool chunked, std::uint64_t length);
  std::unique_ptr<proxy_link> connect(bool fresh, proxy_result& result);
  bool read_early(typename Io::body_parser& parser, proxy_result& result);
  void client_failed(const typename Io::body_read& got, clock_point until, proxy_result& result);
  enum class sent { whole, client_failed, downstream_failed };
  sent send_body(typename Io::body_parser& parser, proxy_link& link, bool chunked, proxy_result& result);
  // `has_body`, `chunked`: the request's, as its head says (read_early may have read the body already).
  proxy_result exchange_once(typename Io::body_parser& parser, const std::string& head, bool has_body,
                             bool chunked, bool may_retry);
  // done: the answer went to the client; failed: `result` says what the client gets; retry: a reused
  // connection ended before any of the answer (nothing was sent to the client).
  enum class relayed { done, failed, retry };
  relayed relay_answer(proxy_link& link, const http::request<http::buffer_body>& req, bool request_whole,
                       proxy_result& result);
  // The steps of relay_answer. The answer's bytes are read into the buffer's first half, [begin, end)
  // not parsed yet; a chunked body's pieces are parsed into its second half.
  struct answer_cursor {
    char* in = nullptr;
    std::size_t in_room = 0;
    std::size_t begin = 0;
    std::size_t end = 0;
    bool any_answer = false;                    // some of the answer came
    call_error read_error = call_error::other;  // the last failed read's kind
  };
  using answer_parser = http::response_parser<http::buffer_body>;
  // The answer towards the client: its head, held until it goes out with the body's first piece.
  struct client_answer {
    std::string head;
    body_framing framing;
  };
  proxy_link::status read_more(proxy_link& link, answer_cursor& at, clock_point until);
  // relayed::done: the final answer's head is in `parser` (1xx ones passed on).
  relayed read_answer_head(proxy_link& link, const http::request<http::buffer_body>& req, answer_cursor& at,
                           std::optional<answer_parser>& parser, proxy_result& result);
  bool pass_interim(const answer_parser& parser, const http::request<http::buffer_body>& req,
                    proxy_result& result);
  bool judge_answer(const answer_parser& parser, proxy_result& result);
  std::string client_head(const http::response<http::buffer_body>& answer, bool bodiless,
                          boost::optional<std::uint64_t> length, bool chunk_out, bool keep_alive);
  bool emit(client_answer& out, std::string_view prefix, std::string_view piece, proxy_result& result);
  relayed relay_identity(proxy_link& link, answer_cursor& at, boost::optional<std::uint64_t> length,
                         client_answer& out, proxy_result& result);
  relayed relay_chunked(proxy_link& link, answer_parser& parser, answer_cursor& at, client_answer& out,
                        proxy_result& result);
  void fail(proxy_result& result, unsigned status, std::string_view why);
  call_outcome breaker_verdict(const proxy_result& done) const;
  void gone(proxy_result& result);
  // The exchange's outcome in the downstream's call metrics, counted once (the first count stands), with
  // the time from the exchange's start. `count_failed`: from how a read, write or lease ended.
  void count(call_outcome outcome, call_error kind = call_error::none);
  void count_failed(proxy_link::status how, call_error kind);
  void count_failed(const proxy_link::io_result& r) {
    count_failed(r.how, r.how == proxy_link::status::eof ? call_error::reset : error_kind(r.ec));
  }
  void begin_span(const http::request<http::buffer_body>& req);
  void open_span();
  void end_span(const proxy_result& result);

  Io& io_;
  const route_settings& route_;
  const proxy_route& settings_;
  const downstream_settings& to_;
  int route_index_;
  downstream& target_;
  const metric_set& series_;
  const session_context& ctx_;
  request_control& control_;
  trace_record* trace_;    // null: not traced
  const edge_gate* gate_;  // the route's front door, null when none: the client fields it drops
  const edge_pass* pass_;  // the identity it admitted the request with (fields sent on), null when none
  boost::asio::yield_context yield_;
  cancel_source cancel_;
  // First half: bytes read; second half: a body piece parsed out of them. Left uninitialised (no 32 KiB
  // memset per exchange): only bytes a read or the parser wrote are ever read back.
  class exchange_buffer {
   public:
    explicit exchange_buffer(std::size_t n) : bytes_(std::make_unique_for_overwrite<char[]>(n)), size_(n) {}
    char* data() { return bytes_.get(); }
    std::size_t size() const { return size_; }

   private:
    std::unique_ptr<char[]> bytes_;
    std::size_t size_;
  } buffer_;
  std::string request_id_;
  clock_point due_{};  // the request's start + proxy.timeout: its body sent and the answer's head in by then
  std::size_t early_bytes_ = 0;  // body bytes read before a connection was taken, at body_room()
  clock_point started_{};
  bool counted_ = false;                                    // the outcome is in the call metrics
  call_outcome counted_outcome_ = call_outcome::cancelled;  // ... and what it was
  call_error counted_error_ = call_error::none;
  proxy_link::io_result failed_write_{};  // how the request body's write to the downstream failed
  bool head_sent_ = false;                // the downstream's answer head reached the client
  // Traced: the exchange's span id and start, the request (for the span's attributes), the span in
  // trace_->spans once made (span_open_), the endpoint used, the downstream's status (0: none came) and
  // why the exchange failed (empty: it did not).
  span_id span_id_{};
  std::uint64_t span_start_ns_ = 0;
  const http::request<http::buffer_body>* req_ = nullptr;
  bool span_open_ = false;
  std::size_t span_ = 0;
  boost::asio::ip::tcp::endpoint peer_;
  unsigned answered_status_ = 0;
  std::string failure_;
};

template <class Io>
void exchange<Io>::count(call_outcome outcome, call_error kind) {
  if (std::exchange(counted_, true)) return;
  counted_outcome_ = outcome;
  counted_error_ = kind;
  series_.call_done(ctx_.thread_index, settings_.downstream_index, outcome_label_index(outcome, kind),
                    clock::now() - started_);
}

template <class Io>
void exchange<Io>::count_failed(proxy_link::status how, call_error kind) {
  switch (how) {
    case proxy_link::status::timed_out:
      count(call_outcome::timeout);
      break;
    case proxy_link::status::cancelled:
      count(call_outcome::cancelled);
      break;
    default:
      count(call_outcome::error, kind);
  }
}

// The client left (or stopped reading or sending): nothing more goes to it.
template <class Io>
void exchange<Io>::gone(proxy_result& result) {
  result.status = 499;
  result.answer.status = 0;
  result.keep_alive = false;
}

template <class Io>
void exchange<Io>::fail(proxy_result& result, unsigned status, std::string_view why) {
  if (trace_ != nullptr) failure_ = why;
  if (cancel_.reason() == cancel_reason::client_gone || io_.peer_closed()) return gone(result);
  if (head_sent_) {  // too late for an answer of the gateway's: the client sees the connection end
    result.keep_alive = false;
    return;
  }
  if (cancel_.reason() == cancel_reason::shutdown) status = 503;
  // The downstream's failures (502, 503, 504) as server.error_detail says; the client's own (400, 408,
  // 413) keep their explanation.
  const bool behind = status >= 502 && status <= 504;
  result.answer = error_response(
      status, behind ? failure_message(ctx_.config->server.errors, status, why) : why, request_id_);
  result.answer.route = route_index_;
  result.status = status;
  result.keep_alive = false;  // the request's body may be partly unread, or the client's side unknown
}

// The exchange's client span starts (before its traceparent goes into the request's head). As for an
// aggregate call, a request not sampled at the head records nothing yet: its span id (sent in the
// traceparent) and start are kept, and the span is made at the end only when the tail rule will keep the
// request (end_span).
template <class Io>
void exchange<Io>::begin_span(const http::request<http::buffer_body>& req) {
  req_ = &req;
  span_id_ = new_span_id();
  span_start_ns_ = unix_nanos_now();
  if (trace_->sampled) open_span();
}

template <class Io>
void exchange<Io>::open_span() {
  namespace attr = span_attributes;
  span_ = trace_->spans.size();
  auto& s = trace_->add_client(std::string(view(req_->method_string())), span_start_ns_);
  s.id = span_id_;
  s.set(attr::http_request_method, view(req_->method_string()));
  s.set(attr::url_full,
        attr::full_url((to_.tls.enabled ? "https://" : "http://") + host_field_value(to_),
                       forwarded_target(route_.pattern, settings_, to_, view(req_->target()))));
  span_open_ = true;
}

template <class Io>
void exchange<Io>::end_span(const proxy_result& result) {
  namespace attr = span_attributes;
  if (trace_ == nullptr) return;
  if (!span_open_) {
    if (result.status < 500) return;  // not sampled and not failed: the record will be discarded
    open_span();
  }
  auto& s = trace_->spans[span_];
  s.end_ns = unix_nanos_now();
  if (peer_.port() != 0) {
    s.set(attr::server_address, peer_.address().to_string());
    s.set(attr::server_port, peer_.port());
  }
  if (answered_status_ != 0) s.set(attr::http_response_status_code, answered_status_);
  s.set(attr::request_bytes, result.uploaded_bytes);
  s.set(attr::response_bytes, result.sent_bytes);
  if (result.status == 499) {
    s.set(attr::outcome, "cancelled");  // the client left: not the downstream's failure
  } else if (!failure_.empty()) {
    s.fail(failure_);
  } else if (answered_status_ >= 400) {  // as the conventions judge a client span
    s.fail("status " + std::to_string(answered_status_));
  } else {
    s.status = span_status::ok;
  }
}

template <class Io>
std::string exchange<Io>::request_head(const http::request<http::buffer_body>& req,
                                       const client_headers& client, const client_origin& origin,
                                       bool has_body, bool chunked, std::uint64_t length) {
  const auto& policy = route_.headers;
  const auto removed = [&](std::string_view name) {
    return std::any_of(policy.remove.begin(), policy.remove.end(),
                       [&](const std::string& n) { return iequals(n, name); }) ||
           std::any_of(policy.set.begin(), policy.set.end(),
                       [&](const header_policy::fixed& f) { return iequals(f.name, name); });
  };
  call_headers forwarding;
  std::string forwarded;  // the forwarded fields, but those the policy removes
  forwarding.forwarded(ctx_.config->server.forwarded, client, origin, policy, forwarded);
  std::string head;
  head.reserve(512);
  head.append(view(req.method_string())).append(" ");
  head += forwarded_target(route_.pattern, settings_, to_, view(req.target()));
  head.append(" HTTP/1.1\r\nHost: ").append(host_field_value(to_));
  for (const auto& field : req) {
    const auto name = view(field.name_string());
    if (hop_by_hop(req, name) || listed_ci(name, own_request_fields) || removed(name)) continue;
    if (identity_dropped(name, origin, forwarding.forwards())) continue;
    if (gate_ != nullptr && gate_->drops(name)) continue;  // the caller's identity is the gateway's to say
    if (trace_ != nullptr && (iequals(name, "traceparent") || iequals(name, "tracestate"))) continue;
    head.append("\r\n").append(name).append(": ").append(view(field.value()));
  }
  for (const auto& f : policy.set) head.append("\r\n").append(f.name).append(": ").append(f.value);
  head += forwarded;
  if (pass_ != nullptr) head += pass_->fields;
  head.append("\r\nX-Request-Id: ").append(request_id_);
  if (trace_ != nullptr) {
    head.append("\r\ntraceparent: ")
        .append(format_traceparent(trace_->trace, span_id_, trace_->sampled).view());
    if (!trace_->tracestate.empty()) head.append("\r\ntracestate: ").append(trace_->tracestate);
  }
  if (chunked) {
    head += "\r\nTransfer-Encoding: chunked";
  } else if (has_body || (req.method() == http::verb::post || req.method() == http::verb::put ||
                          req.method() == http::verb::patch)) {
    head.append("\r\nContent-Length: ").append(std::to_string(length));
  }
  head += "\r\n\r\n";
  return head;
}

template <class Io>
std::unique_ptr<proxy_link> exchange<Io>::connect(bool fresh, proxy_result& result) {
  const auto connect_timeout =
      settings_.connect_timeout.count() > 0 ? settings_.connect_timeout : to_.connect_timeout;
  lease_failure why;
  const auto ready_by = std::min(clock::now() + connect_timeout, due_);  // the upload's time includes it
  auto link = target_.lease({ctx_.thread_index, ready_by, &cancel_, fresh}, yield_, why);
  if (!link) {
    using enum lease_failure::kind;
    fail(result,
         why.what == busy || why.what == circuit_open ? 503
         : why.what == timed_out                      ? 504
                                                      : 502,
         "downstream '" + to_.name + "': " + why.text);
    count(why.what == busy           ? call_outcome::rejected
          : why.what == circuit_open ? call_outcome::circuit_open
          : why.what == timed_out    ? call_outcome::timeout
          : why.what == cancelled    ? call_outcome::cancelled
                                     : call_outcome::error,
          why.what == failed ? why.error : call_error::none);
  }
  return link;
}

// A body that fits the buffer's second half (a length known to fit, or chunked) is read before a
// connection is taken, all of it or what fits, so that a client that sends it slowly holds no pooled
// connection meanwhile (the lease then follows at once). Not for a client that expects 100 Continue: it
// sends nothing before the downstream has the head. False when the client failed (`result` says what it
// gets).
template <class Io>
bool exchange<Io>::read_early(typename Io::body_parser& parser, proxy_result& result) {
  const auto& req = parser.get();
  const auto length = parser.content_length();
  if (parser.is_done() || (length && *length > body_room_size()) || expects_continue(req)) return true;
  while (early_bytes_ < body_room_size() && !parser.is_done()) {
    const auto until = upload_deadline();
    const auto got =
        io_.read_body(parser, body_room() + early_bytes_, body_room_size() - early_bytes_, until, yield_);
    if (!got.ok) {
      client_failed(got, until, result);
      return false;
    }
    early_bytes_ += got.bytes;
  }
  return true;
}

// A read of the client's body failed: a body the parser refused gets 413 or 400, one that did not come
// in time (idle_timeout, or proxy.timeout for the whole) 408; else the client went away.
template <class Io>
void exchange<Io>::client_failed(const typename Io::body_read& got, clock_point until, proxy_result& result) {
  if (got.ec && got.ec != http::error::partial_message) {
    fail(result, got.ec == http::error::body_limit ? 413 : 400,
         got.ec == http::error::body_limit ? "request body larger than proxy.max_body_bytes"
                                           : "malformed request body");
  } else if (!got.ec && !cancel_.cancelled() && clock::now() >= until) {
    fail(result, 408,
         until >= due_ ? "request body not received within proxy.timeout"
                       : "request body stalled longer than proxy.idle_timeout");
  } else {
    gone(result);  // the client went away
  }
}

// Streams the client's body to the downstream: what read_early() holds first, then pieces read into the
// buffer's second half as they come, written with the request's framing. The whole upload is due by
// proxy.timeout.
template <class Io>
typename exchange<Io>::sent exchange<Io>::send_body(typename Io::body_parser& parser, proxy_link& link,
                                                    bool chunked, proxy_result& result) {
  body_framing framing(chunked);
  char* piece = body_room();
  std::size_t ready = std::exchange(early_bytes_, 0);
  for (;;) {
    if (ready == 0 && !parser.is_done()) {
      const auto until = upload_deadline();
      const auto got = io_.read_body(parser, piece, body_room_size(), until, yield_);
      if (!got.ok) {
        count(call_outcome::cancelled);  // the client's failure: the exchange is abandoned
        client_failed(got, until, result);
        return sent::client_failed;
      }
      ready = got.bytes;
    }
    result.uploaded_bytes += ready;
    if (ready > 0) {
      const auto w =
          link.write(framing.before(ready), std::string_view(piece, ready), upload_deadline(), yield_);
      if (!w.ok()) {
        fail(result, w.how == proxy_link::status::timed_out ? 504 : 502,
             "downstream stopped taking the request body");
        failed_write_ = w;
        return sent::downstream_failed;
      }
      ready = 0;
    }
    if (parser.is_done()) break;
  }
  if (chunked) {
    const auto w = link.write(framing.end(), {}, upload_deadline(), yield_);
    if (!w.ok()) {
      fail(result, 502, "downstream stopped taking the request body");
      failed_write_ = w;
      return sent::downstream_failed;
    }
  }
  return sent::whole;
}

// Reads more into the first half (keeping what is still unparsed at its front); the read's status.
template <class Io>
proxy_link::status exchange<Io>::read_more(proxy_link& link, answer_cursor& at, clock_point until) {
  if (at.begin > 0) {
    std::memmove(at.in, at.in + at.begin, at.end - at.begin);
    at.end -= at.begin;
    at.begin = 0;
  }
  if (at.end == at.in_room) {  // a line longer than the buffer
    at.read_error = call_error::too_large;
    return proxy_link::status::failed;
  }
  const auto r = link.read_some(at.in + at.end, at.in_room - at.end, until, yield_);
  at.end += r.bytes;
  if (r.bytes > 0) at.any_answer = true;
  if (r.bytes == 0) at.read_error = r.how == proxy_link::status::eof ? call_error::reset : error_kind(r.ec);
  return r.bytes > 0 ? proxy_link::status::ok : r.how;
}

// The answer's head (after any 1xx heads), within proxy.timeout from the request's start, the upload
// included.
template <class Io>
typename exchange<Io>::relayed exchange<Io>::read_answer_head(proxy_link& link,
                                                              const http::request<http::buffer_body>& req,
                                                              answer_cursor& at,
                                                              std::optional<answer_parser>& parser,
                                                              proxy_result& result) {
  for (;;) {
    parser.emplace();
    parser->header_limit(static_cast<std::uint32_t>(ctx_.config->limits.max_header_bytes));
    parser->body_limit(boost::none);
    parser->eager(false);
    if (req.method() == http::verb::head) parser->skip(true);
    for (;;) {
      if (at.end > at.begin) {
        error_code ec;
        at.begin += parser->put(boost::asio::buffer(at.in + at.begin, at.end - at.begin), ec);
        if (parser->is_header_done()) break;
        if (ec && ec != http::error::need_more) {
          fail(result, 502, "downstream answer is not valid HTTP");
          count(call_outcome::error,
                ec == http::error::header_limit ? call_error::too_large : call_error::other);
          return relayed::failed;
        }
      }
      const auto how = read_more(link, at, due_);
      if (how == proxy_link::status::ok) continue;
      const bool retry_worthy = !at.any_answer && link.reused();
      if (retry_worthy && how != proxy_link::status::timed_out && how != proxy_link::status::cancelled)
        return relayed::retry;  // the caller may try once more on a new connection
      const bool garbled = how == proxy_link::status::eof && at.end > at.begin;
      if (garbled) {
        fail(result, 502, "downstream answer is not valid HTTP");
      } else {
        fail(result, how == proxy_link::status::timed_out ? 504 : 502,
             how == proxy_link::status::timed_out ? "downstream answer timed out"
                                                  : "downstream closed the connection");
      }
      count_failed(how, garbled ? call_error::other : at.read_error);
      return relayed::failed;
    }
    const auto status = parser->get().result_int();
    if (status >= 200 || status == 101) return relayed::done;
    if (!pass_interim(*parser, req, result)) return relayed::failed;
  }
}

// An interim answer: passed on to an HTTP/1.1 client (a 100 only when the client asked for one). False
// when the client is gone.
template <class Io>
bool exchange<Io>::pass_interim(const answer_parser& parser, const http::request<http::buffer_body>& req,
                                proxy_result& result) {
  const auto status = parser.get().result_int();
  if (req.version() < 11 || (status == 100 && req.find(http::field::expect) == req.end())) return true;
  std::string interim =
      "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason_phrase(status)) + "\r\n";
  for (const auto& field : parser.get()) {
    const auto name = view(field.name_string());
    if (!hop_by_hop(parser.get(), name))
      interim.append(name).append(": ").append(view(field.value())).append("\r\n");
  }
  interim += "\r\n";
  if (io_.send(interim, {}, settings_.idle_timeout, yield_)) return true;
  gone(result);
  return false;
}

// The answer's head judged: one the gateway cannot relay fails (502); else counted, as the breaker judges
// it (a 4xx is the client's answer, not a failure).
template <class Io>
bool exchange<Io>::judge_answer(const answer_parser& parser, proxy_result& result) {
  const unsigned status = parser.get().result_int();
  if (transfer_coding_status(parser.get()) !=
      0) {  // a coding the gateway does not decode is never relabelled
    fail(result, 502, "downstream answer in a transfer coding other than chunked");
    count(call_outcome::error, call_error::other);
    return false;
  }
  if (status == 101) {  // no Upgrade is ever forwarded: a 101 is a broken answer
    fail(result, 502, "downstream switched protocols unasked");
    count(call_outcome::error, call_error::other);
    return false;
  }
  if (status >= 500) {
    count(call_outcome::error, call_error::status_5xx);
  } else {
    count(call_outcome::ok);
  }
  return true;
}

// The head the client gets: the downstream's status and end-to-end fields, with the gateway's framing.
template <class Io>
std::string exchange<Io>::client_head(const http::response<http::buffer_body>& answer, bool bodiless,
                                      boost::optional<std::uint64_t> length, bool chunk_out,
                                      bool keep_alive) {
  const unsigned status = answer.result_int();
  std::string head = "HTTP/1.1 " + std::to_string(status) + " ";
  const auto reason = view(answer.reason());
  head += !reason.empty() && char_class::all_of(reason, char_class::field_text)
              ? std::string(reason)
              : std::string(reason_phrase(status));
  head += "\r\n";
  bool has_request_id = false;
  for (const auto& field : answer) {
    const auto name = view(field.name_string());
    // A HEAD or 304 answer's Content-Length describes the body a GET would get: it stays.
    const bool length_stays = bodiless && status != 204 && iequals(name, "content-length");
    if (!length_stays && hop_by_hop(answer, name)) continue;
    if (iequals(name, "x-request-id")) has_request_id = true;
    head.append(name).append(": ").append(view(field.value())).append("\r\n");
  }
  if (!has_request_id) head.append("X-Request-Id: ").append(request_id_).append("\r\n");
  if (!bodiless && length) head.append("Content-Length: ").append(std::to_string(*length)).append("\r\n");
  if (chunk_out) head += "Transfer-Encoding: chunked\r\n";
  if (!keep_alive) head += "Connection: close\r\n";
  head += "\r\n";
  return head;
}

// Writes a piece with what precedes it; the head goes out with the body's first piece (one write for a
// small answer). False when the client is gone.
template <class Io>
bool exchange<Io>::emit(client_answer& out, std::string_view prefix, std::string_view piece,
                        proxy_result& result) {
  bool ok = false;
  if (!head_sent_) {
    out.head += prefix;
    ok = io_.send(out.head, piece, settings_.idle_timeout, yield_);
    head_sent_ = true;  // or partly: nothing else may go out now
  } else {
    ok = io_.send(prefix, piece, settings_.idle_timeout, yield_);
  }
  if (!ok) {
    cancel_.request_cancel(cancel_reason::client_gone);
    gone(result);
    return false;
  }
  result.sent_bytes += piece.size();
  return true;
}

// An identity body (a length, or up to the close): its bytes are relayed as read, through the whole
// buffer, without parsing.
template <class Io>
typename exchange<Io>::relayed exchange<Io>::relay_identity(proxy_link& link, answer_cursor& at,
                                                            boost::optional<std::uint64_t> length,
                                                            client_answer& out, proxy_result& result) {
  auto left = length.value_or(std::numeric_limits<std::uint64_t>::max());
  for (;;) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(at.end - at.begin, left));
    if (n > 0 && !emit(out, out.framing.before(n), std::string_view(at.in + at.begin, n), result))
      return relayed::failed;
    at.begin += n;
    left -= n;
    if (length && left == 0) return relayed::done;
    at.begin = at.end = 0;
    const auto r = link.read_some(buffer_.data(), buffer_.size(), idle_deadline(), yield_);
    if (r.bytes > 0) {
      at.in = buffer_.data();
      at.end = r.bytes;
      continue;
    }
    if (r.how == proxy_link::status::eof && !length) return relayed::done;  // an answer up to the close
    fail(result, 502, "downstream answer cut short");  // after the head: the connection just ends
    return relayed::failed;
  }
}

// A chunked body: parsed out of the first half of the buffer into the second.
template <class Io>
typename exchange<Io>::relayed exchange<Io>::relay_chunked(proxy_link& link, answer_parser& parser,
                                                           answer_cursor& at, client_answer& out,
                                                           proxy_result& result) {
  char* const room = buffer_.data() + at.in_room;
  const std::size_t room_size = buffer_.size() - at.in_room;
  parser.eager(true);
  while (!parser.is_done()) {
    auto& body = parser.get().body();
    body.data = room;
    body.size = room_size;
    error_code ec;
    if (at.end > at.begin) {
      at.begin += parser.put(boost::asio::buffer(at.in + at.begin, at.end - at.begin), ec);
      if (ec == http::error::need_buffer || ec == http::error::need_more) ec = {};
    }
    if (ec) {
      fail(result, 502, "downstream answer's chunks are malformed");
      return relayed::failed;
    }
    const std::size_t produced = room_size - body.size;
    if (produced > 0) {
      if (!emit(out, out.framing.before(produced), std::string_view(room, produced), result))
        return relayed::failed;
      continue;
    }
    if (parser.is_done()) break;
    if (read_more(link, at, idle_deadline()) != proxy_link::status::ok) {
      fail(result, 502, "downstream answer cut short");
      return relayed::failed;
    }
  }
  return relayed::done;
}

// Reads the downstream's answer and passes it on: head first (1xx ones to an HTTP/1.1 client), then the
// body piece by piece. relayed::failed when the exchange failed (before the head went out:
// `result.answer`).
template <class Io>
typename exchange<Io>::relayed exchange<Io>::relay_answer(proxy_link& link,
                                                          const http::request<http::buffer_body>& req,
                                                          bool request_whole, proxy_result& result) {
  answer_cursor at;
  at.in = buffer_.data();
  at.in_room = buffer_.size() / 2;
  std::optional<answer_parser> parser;
  if (const auto head = read_answer_head(link, req, at, parser, result); head != relayed::done) return head;
  if (!judge_answer(*parser, result)) return relayed::failed;
  const unsigned status = parser->get().result_int();

  // The answer's framing towards the client.
  const bool bodiless = req.method() == http::verb::head || status == 204 || status == 304;
  const auto length = parser->content_length();
  const bool to_end = !bodiless && !length && !parser->chunked();  // ends with the connection
  const bool chunk_out = !bodiless && !length && req.version() >= 11;
  const bool keep_alive = req.keep_alive() && request_whole && !ctx_.state->closing() &&
                          (bodiless || length || chunk_out) &&
                          !(req.version() < 11 && req.count(http::field::transfer_encoding) != 0);
  client_answer out{client_head(parser->get(), bodiless, length, chunk_out, keep_alive),
                    body_framing(chunk_out)};
  result.status = status;
  answered_status_ = status;

  // nothing to read for a bodiless answer: any bytes behind the head are past the answer
  if (!bodiless) {
    const auto body = parser->chunked() ? relay_chunked(link, *parser, at, out, result)
                                        : relay_identity(link, at, length, out, result);
    if (body != relayed::done) return body;
  }
  // Bytes past the answer (after a bodiless one too: a downstream that sent a body with it is out of step
  // with the connection): they are no answer to anyone, and the connection is not reused.
  const bool extra = at.end > at.begin;
  if (!head_sent_ || chunk_out) {
    if (!emit(out, out.framing.end(), {}, result)) return relayed::failed;
  }
  result.keep_alive = keep_alive && !to_end;
  // Nothing may follow the answer on a connection that goes back to the pool.
  const bool reusable = !to_end && parser->keep_alive() && !extra && request_whole;
  if (bodiless) link.answered_without_body();
  // A relayed answer is the endpoint's failure when the failure rule counts its status (a 5xx by default).
  link.finish(reusable, counts_answer_status(to_.breaker.failures, status));
  return relayed::done;
}

// The exchange's verdict for the downstream's circuit breaker, by its failure rule, from the outcome
// counted (a relayed answer by its status); the gateway's own refusals (a full pool, a client's error) and a
// client that left count neither way.
template <class Io>
call_outcome exchange<Io>::breaker_verdict(const proxy_result& done) const {
  const bool own = done.answer.status != 0 && done.answer.status != 502 && done.answer.status != 504;
  // A relayed 4xx is `ok` in the call metrics (the downstream answered); the rule judges its status.
  const bool relayed_4xx = counted_outcome_ == call_outcome::ok && answered_status_ >= 400;
  const auto& rule = to_.breaker.failures;
  const bool failed = relayed_4xx
                          ? counts_answer_status(rule, answered_status_)
                          : counts_as_failure(rule, counted_outcome_, counted_error_, answered_status_);
  const auto verdict = done.status == 499 || own                              ? call_outcome::cancelled
                       : failed                                               ? call_outcome::error
                       : counted_outcome_ == call_outcome::ok && !relayed_4xx ? call_outcome::ok
                                                                              : call_outcome::cancelled;
  return verdict;
}

template <class Io>
proxy_result exchange<Io>::run(http::request_parser<http::string_body>& head_parser,
                               const client_origin& origin) {
  due_ = clock::now() + settings_.timeout;
  proxy_result result;
  result.answer.status = 0;  // none owed unless a step fails
  typename Io::body_parser parser(std::move(head_parser));
  parser.body_limit(settings_.max_body_bytes == 0 ? boost::optional<std::uint64_t>()
                                                  : boost::optional<std::uint64_t>(settings_.max_body_bytes));
  parser.eager(true);
  const auto& req = parser.get();
  request_id_ = make_request_id(view(req["X-Request-Id"]));
  result.answer.request_id = request_id_;
  const bool has_body = !parser.is_done();
  const bool chunked = has_body && parser.chunked();
  if (settings_.max_body_bytes != 0 && parser.content_length() &&
      *parser.content_length() > settings_.max_body_bytes) {
    fail(result, 413, "request body larger than proxy.max_body_bytes");
    result.body_unread = true;
    return result;
  }
  if (!read_early(parser, result)) {  // the client failed before the downstream was asked anything
    result.body_unread = true;
    return result;
  }
  const beast_headers<http::request<http::buffer_body>> client(req);
  if (trace_ != nullptr) begin_span(req);
  const auto head = request_head(req, client, origin, has_body, chunked, parser.content_length().value_or(0));
  const bool may_retry = !has_body && idempotent(view(req.method_string()));
  started_ = clock::now();

  // The downstream's circuit breaker judges pass-through exchanges like calls: a failure is no answer
  // (502, 504) or a 5xx answer; a refusal of the gateway's own (pool full, client errors) and a client
  // that left count neither way.
  auto* breaker = target_.breaker();
  circuit_breaker::ticket ticket;
  if (breaker != nullptr) {
    ticket = breaker->allow(clock::now());
    if (!ticket.allowed) {
      fail(result, 503, "downstream '" + to_.name + "': circuit open");
      count(call_outcome::circuit_open);
      end_span(result);
      return result;
    }
  }
  auto done = exchange_once(parser, head, has_body, chunked, may_retry);
  if (!counted_) {  // every path counts its own outcome; this only keeps the count whole
    count(done.status == 499              ? call_outcome::cancelled
          : done.answer.status == 504     ? call_outcome::timeout
          : done.answer.status / 100 == 5 ? call_outcome::error
                                          : call_outcome::ok,
          done.answer.status / 100 == 5 && done.answer.status != 504 ? call_error::other : call_error::none);
  }
  done.answer.request_id = request_id_;
  done.body_unread = done.body_unread || !parser.is_done();
  if (breaker != nullptr) breaker->record(ticket, breaker_verdict(done), clock::now());
  end_span(done);
  return done;
}

template <class Io>
proxy_result exchange<Io>::exchange_once(typename Io::body_parser& parser, const std::string& head,
                                         bool has_body, bool chunked, bool may_retry) {
  proxy_result result;
  result.answer.status = 0;
  const auto& req = parser.get();
  for (int attempt = 0;; ++attempt) {
    auto link = connect(attempt > 0, result);
    if (!link) return result;
    if (trace_ != nullptr) peer_ = link->remote();
    // A body read whole before the lease (read_early) goes out with the head, in one write.
    const auto with_head = has_body && !chunked && parser.is_done()
                               ? std::string_view(body_room(), early_bytes_)
                               : std::string_view();
    const auto w = link->write(head, with_head, upload_deadline(), yield_);
    if (!w.ok()) {
      if (may_retry && attempt == 0 && link->reused() && w.how != proxy_link::status::cancelled) continue;
      fail(result, w.how == proxy_link::status::timed_out ? 504 : 502, "downstream took no request");
      count_failed(w);
      return result;
    }
    result.uploaded_bytes += with_head.size();
    if (has_body && with_head.empty()) {
      if (expects_continue(req) &&
          !io_.send("HTTP/1.1 100 Continue\r\n\r\n", {}, settings_.idle_timeout, yield_)) {
        gone(result);
        count(call_outcome::cancelled);
        return result;
      }
      const auto sent_body = send_body(parser, *link, chunked, result);
      if (sent_body == sent::client_failed) {
        link->finish(false, false);
        return result;
      }
      if (sent_body == sent::downstream_failed) {
        // A downstream that stops reading a body has often answered already (413, 401): that answer is
        // the client's, when it is there; else the gateway's 502 stands.
        proxy_result early;
        early.answer.status = 0;
        early.uploaded_bytes = result.uploaded_bytes;
        early.body_unread = result.body_unread = true;
        if (relay_answer(*link, req, false, early) == relayed::done) return early;
        count_failed(failed_write_);  // unless reading the answer counted already
        link->finish(false, true);
        return head_sent_ ? early : result;  // an answer cut after its head: nothing more goes out
      }
    }
    // From here the client is watched: one that leaves cancels the exchange.
    io_.watch_peer([this] { control_.cancel(cancel_reason::client_gone); });
    const auto how = relay_answer(*link, req, parser.is_done(), result);
    io_.stop_watch();
    if (how == relayed::done) return result;
    if (how == relayed::retry && may_retry && attempt == 0) {
      link->finish(false, false);
      continue;  // a reused connection the downstream had closed: once more on a new one
    }
    // A reused connection closed under the request is not the endpoint's failure (it closed it idle).
    link->finish(false, how == relayed::failed && (result.status == 502 || result.status == 504));
    if (how == relayed::retry) {
      fail(result, 502, "downstream closed the connection");
      count(call_outcome::error, call_error::reset);
    }
    return result;
  }
}

}  // namespace

template <class Io>
proxy_result run_proxy(Io& io, http::request_parser<http::string_body>& parser,
                       const config_generation& generation, int route_index, const session_context& ctx,
                       const client_origin& origin, request_control& control, trace_record* trace,
                       const edge_pass* pass, boost::asio::yield_context yield) {
  exchange<Io> x(io, generation, route_index, ctx, control, trace, pass, yield);
  return x.run(parser, origin);
}

template proxy_result run_proxy(client_io&, http::request_parser<http::string_body>&,
                                const config_generation&, int, const session_context&, const client_origin&,
                                request_control&, trace_record*, const edge_pass*,
                                boost::asio::yield_context);
template proxy_result run_proxy(tls_client_io&, http::request_parser<http::string_body>&,
                                const config_generation&, int, const session_context&, const client_origin&,
                                request_control&, trace_record*, const edge_pass*,
                                boost::asio::yield_context);

}  // namespace gateway
