// One client connection, one request after another. The path of a request, each step a function of
// `connection` below, in this order:
//
//   read_head -> refused_at_edge -> classify -> [pass_through] | [read_body] -> handle -> respond -> finish
//
// - read_head: the head under the idle and header timeouts (client_io / tls_client_io).
// - refused_at_edge: request_framing's admit_head (smuggling-prone fields, the target made canonical).
// - classify: the ONE route lookup of the request (request_handler::classify -> router::find); its
//   answer (`request_step::route`: route index, captures, 404/405 with Allow, kind) is passed to every
//   later step: the pass-through branch, the body's read or refusal, shedding, handle() and the log.
// - pass_through: a proxy route leaves here after its head; proxy_exchange streams it both ways.
// - read_body: the body of a route that takes one (Expect: 100-continue answered first); otherwise the
//   request is answered from its head (framing 400/501, 404, 405, 413) and the connection ends lingering.
// - handle: shedding, then request_handler::handle (fan-out and merge) with the client watched.
// - respond / finish: the answer written (keep-alive decided here), then span, metrics and access line.
//
// Ownership: `connection` lives on the connection coroutine's stack and owns the parser of the current
// request (`current_`, whose strings the request's views point into until the next request), its trace
// record, the request_control and the registry membership (both outlive every step). The transport
// (`io_`) and the socket are run_session's, and outlive the connection object.
//
// Wake-ups (docs/ARCHITECTURE.md, "Wake-ups and cancellation"): this coroutine is resumed only by the
// completions of its own waits (reads, writes, the fan-out's wake_event, the proxy link). Two things may
// act on it from outside, and both only cancel: the peer watch (io_.watch_peer) and the session registry
// (drain, shutdown) call `control_.cancel()`, which asks the fan-out or the exchange's cancel_source to
// stop; neither resumes this coroutine inline, which goes on later from the queue. No step resumes
// another coroutine.

#include "gateway/server/session.hpp"

#include "gateway/observe/tracing.hpp"
#include "gateway/trace/span_attributes.hpp"

#include "gateway/codec/http_text.hpp"
#include "gateway/runtime/memory_budget.hpp"
#include "gateway/server/beast_headers.hpp"
#include "gateway/server/client_io.hpp"
#include "gateway/server/edge_gate.hpp"
#include "gateway/server/proxy_exchange.hpp"
#include "gateway/server/request_framing.hpp"
#include "gateway/server/response_head.hpp"
#include "gateway/server/tls_client_io.hpp"
#include "gateway/tls/certificate_reloader.hpp"

#include <boost/beast/http/error.hpp>

#include <algorithm>
#include <iterator>
#include <memory>
#include <optional>
#include <type_traits>

namespace gateway {

namespace net = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;

namespace {

// `vary`: the route's answers depend on Accept-Encoding (compression is on), its error answers too: a
// cache must not serve one client's answer to another that accepts other codings.
std::string head_of(const outbound_response& r, bool keep_alive, bool vary) {
  return serialize({.status = r.status,
                    .content_type = "application/json",
                    .content_encoding = r.content_encoding,
                    .content_length = r.body.size(),
                    .request_id = r.request_id,
                    .degraded = r.degraded,
                    .vary_accept_encoding = vary && r.route >= 0,
                    .allow = r.allow,
                    .retry_after = r.status == 503 && !r.passed,
                    .keep_alive = keep_alive,
                    .fields = r.fields});
}

// Maps a read failure to the answer the client still deserves, or 0 when the connection just ends.
unsigned status_for_read_error(const error_code& ec) {
  if (ec == http::error::header_limit) return 431;
  if (ec == http::error::body_limit) return 413;
  if (ec.category() == make_error_code(http::error::end_of_stream).category() &&
      ec != http::error::end_of_stream && ec != http::error::partial_message) {
    return 400;
  }
  return 0;
}

// A connection that ends with a request's body unread (refused from its head, or cut short) is closed
// lingering (RFC 9112 9.6): what the client still sends is read and dropped for at most this long and
// this much, so that the close does not reset the connection before the client has read its answer.
constexpr auto linger_time = std::chrono::seconds(5);
constexpr std::size_t linger_bytes = 64 * 1024 * 1024;

std::string_view header(const http::request<http::string_body>& req, std::string_view name) {
  auto it = req.find(name);
  return it == req.end() ? std::string_view() : std::string_view(it->value().data(), it->value().size());
}

// A list-valued field's value: the one field's, or several fields joined with commas into `joined`
// (RFC 9110 5.3), so that a refusal in a second field is not lost.
template <class key>  // http::field, or a name Beast has no constant for
std::string_view list_header(const http::request<http::string_body>& req, key name, std::string& joined) {
  const auto [first, last] = req.equal_range(name);
  if (first == last) return {};
  if (std::next(first) == last) return std::string_view(first->value().data(), first->value().size());
  joined.clear();
  for (auto it = first; it != last; ++it) {
    if (!joined.empty()) joined += ',';
    joined.append(it->value().data(), it->value().size());
  }
  return joined;
}

// The answer owed to a request whose transfer codings cannot be framed (status 0 when they can). Beast
// frames only chunked; whatever it made of another coding, the bytes after the head must not be read as a
// request of their own: the caller answers and closes.
outbound_response framing_refusal(const http::request<http::string_body>& req) {
  const auto status = transfer_coding_status(req);
  if (status == 0) return no_answer();
  return error_response(status,
                        status == 400 ? "transfer coding not chunked: request length unknown"
                                      : "transfer coding not implemented",
                        make_request_id(header(req, "X-Request-Id")));
}

// The peer's address ("10.1.2.3"), and whether it is a trusted proxy; empty when unknown.
struct peer_info {
  std::string address;
  std::uint16_t port = 0;
  bool trusted = false;
};

peer_info peer_of(const net::ip::tcp::socket& socket, const server_settings& server) {
  error_code ec;
  const auto ep = socket.remote_endpoint(ec);
  if (ec) return {};
  peer_info p{ep.address().to_string(), ep.port(), false};
  const auto peer = ip_address::parse(p.address);  // once, not once per trusted network
  p.trusted = std::any_of(server.trusted_proxies.begin(), server.trusted_proxies.end(),
                          [&](const ip_network& n) { return peer && n.contains(*peer); });
  return p;
}

// Counts the connection's coroutine and the connection itself for as long as it lives.
class session_counted {
 public:
  session_counted(const session_context& ctx) : ctx_(ctx) { ctx_.metrics->coroutine_started(); }
  session_counted(const session_counted&) = delete;
  session_counted& operator=(const session_counted&) = delete;
  ~session_counted() {
    ctx_.metrics->coroutine_ended();
    ctx_.state->connections.fetch_sub(1, std::memory_order_relaxed);
  }

 private:
  const session_context& ctx_;
};

// Finishes a request's server span and hands its record to the tracer, which keeps it when sampled, or
// when the answer was degraded or failed (5xx).
void end_trace(trace_record& trace, const outbound_response& r, std::string_view method,
               const config_generation& generation, tracer& to) {
  namespace attr = span_attributes;
  const bool degraded_or_failed = !r.degraded.empty() || r.status >= 500;
  if (!tracer::keep(trace, degraded_or_failed)) return;  // nothing to build: it would be discarded
  auto& s = trace.server;
  const std::string_view route =
      r.route >= 0 ? std::string_view(generation.config->routes[static_cast<std::size_t>(r.route)].path) : "";
  s.name = route.empty() ? std::string(method) : std::string(method) + " " + std::string(route);
  s.kind = span_kind::server;
  s.end_ns = unix_nanos_now();
  s.set(attr::http_request_method, method);
  if (!route.empty()) s.set(attr::http_route, route);
  s.set(attr::http_response_status_code, r.status);
  s.set(attr::degraded, !r.degraded.empty());
  if (r.status >= 500) s.fail("status " + std::to_string(r.status));
  to.submit(std::move(trace), degraded_or_failed);
}

// The handshake of a TLS connection, within header_timeout of the accept, like a plain connection's
// first byte; a failure is counted, a drain or a shutdown that cancels it is not.
bool handshake(tls_client_io& io, const session_context& ctx, net::yield_context yield) {
  using failure = tls_client_io::handshake_failure;
  failure why{};
  if (io.handshake(clock::now() + ctx.config->limits.header_timeout, why, yield)) return true;
  if (why != failure::none) {
    ctx.metrics->tls_handshake_failed(why == failure::timeout  ? tls_failure::timeout
                                      : why == failure::closed ? tls_failure::closed
                                                               : tls_failure::protocol);
  }
  return false;
}

// What the access log takes from a request's head. A pass-through exchange moves the head into a parser
// of its own: its fields are copied first (`kept_head`), else they are read from the current parser.
struct logged_head {
  std::string target;
  std::string user_agent;
  std::string traceparent;
  std::string forwarded_for;
};

// One request's facts shared by its steps: when it started, when it was received whole (the deadline
// counts from there: after a body, from its end), its method, and its route, found once.
struct request_step {
  clock::time_point started;
  clock::time_point received;
  std::string_view method;
  request_route route;
};

// The connection's loop over its transport: client_io (plain TCP) or tls_client_io, which have the same
// operations; a TLS connection also has its handshake first and its close_notify last. Lives on the
// connection coroutine's stack; each step below is one stage of a request, in the order they run.
template <class transport>
class connection {
 public:
  connection(net::ip::tcp::socket& socket, transport& io, const session_context& ctx,
             net::yield_context yield)
      : socket_(socket),
        io_(io),
        ctx_(ctx),
        limits_(ctx.config->limits),
        yield_(yield),
        peer_(needs_peer(ctx) ? peer_of(socket, ctx.config->server) : peer_info{}),
        client_(!ctx.log                ? std::string()
                : peer_.address.empty() ? "-"
                                        : peer_.address + ":" + std::to_string(peer_.port)),
        listed_(*ctx.registry, {&socket, &control_}),
        arriving_([this] { listed_.set_idle(false); }) {}

  // Serves requests until the connection ends, then closes it.
  void run() {
    error_code ec;
    socket_.set_option(net::ip::tcp::no_delay(true), ec);
    if constexpr (tls) {
      listed_.set_idle(true);  // no request yet: a drain closes it like a connection waiting for one
      if (!handshake(io_, ctx_, yield_)) {
        socket_.close(ec);
        return;
      }
    }
    while (serve_one()) {
    }
    close();
  }

 private:
  static constexpr bool tls = std::is_same_v<transport, tls_client_io>;
  using parser_type = http::request_parser<http::string_body>;
  using read_result = typename transport::read_result;

  static bool needs_peer(const session_context& ctx) {
    return ctx.log || ctx.config->server.forwarded != forwarded_style::none;
  }
  const request_handler& handler() const { return *generation_->handler; }

  // One request from its head to its log line; false when the connection ends after it.
  //
  // A request that goes well keeps the coroutine's stack within two pages (docs/ARCHITECTURE.md, "The
  // coroutine stack"): what follows the read is a frame of its own, so that its locals are not on the
  // stack under Beast's field parsing (4 KiB for its obs-fold buffer).
  bool serve_one() {
    auto& parser = new_request();
    return serve_read(parser, read_head(parser));
  }

  // The steps after the read. The rare ones are functions of their own ([[gnu::noinline]]), so that
  // their locals are not in this frame, which stays on the stack while the request is handled.
  [[gnu::noinline]] bool serve_read(parser_type& parser, read_result read) {
    request_step step;
    step.started = step.received = clock::now();
    if (auto now = ctx_.generation->load(); generation_ != now) generation_ = std::move(now);  // a reload's
    const bool head_read = read.ok || (read.ec == http::error::body_limit && parser.is_header_done());
    if (head_read && control_.reason() == cancel_reason::none && refused_at_edge(parser, step)) return false;
    if (ctx_.tracing != nullptr && head_read) begin_trace(parser);
    if (head_read) classify(parser.get(), step);
    pass_.reset();
    if (const auto* gate = generation_->gate(step.route.index());
        gate != nullptr && control_.reason() == cancel_reason::none) {
      if (auto go_on = refused_by_gate(*gate, parser, step)) return *go_on;
    }
    if (step.route.kind == request_kind::pass_through) return pass_through_or_refuse(parser, step);
    if (!read.ok && read.ec == http::error::body_limit && control_.reason() == cancel_reason::none) {
      if (!read_body(parser, read, step)) return false;
    }
    if (!read.ok) {
      answer_read_error(parser, read.ec, step.started);
      return false;
    }
    step.method = method_of(parser.get());
    if (refused_framing(parser, step)) return false;
    return handle(parser.get(), step);
  }

  // The route's front door (server/edge_gate.hpp), from the head: nothing when the request is admitted
  // (pass_ holds its identity); otherwise its refusal is sent and the answer says whether the connection
  // goes on (it does when the request was read whole).
  [[gnu::noinline]] std::optional<bool> refused_by_gate(const edge_gate& gate, parser_type& parser,
                                                        request_step& step) {
    const auto& req = parser.get();
    const beast_headers<http::request<http::string_body>> fields(req);
    std::string client = peer_.address;
    bool trusted = peer_.trusted;
    if (client.empty()) {  // not needed for anything else: found now
      auto peer = peer_of(socket_, ctx_.config->server);
      client = std::move(peer.address);
      trusted = peer.trusted;
    }
    if (trusted) {
      const auto forwarded = list_header(req, std::string_view("X-Forwarded-For"), forwarded_for_);
      if (const auto by_proxy = forwarded_client(forwarded, ctx_.config->server.trusted_proxies);
          !by_proxy.empty())
        client = std::string(by_proxy);
    }
    pass_.emplace();
    const auto now = clock::now();
    // A limit's Redis round trip is bounded by the store's timeout, and by the route's deadline.
    const auto* aggregate =
        generation_->config->routes[static_cast<std::size_t>(step.route.index())].aggregate();
    const auto deadline =
        aggregate != nullptr ? step.received + aggregate->deadline : now + limits_.header_timeout;
    auto r = gate.check(fields, client, header(req, "X-Request-Id"), ctx_.thread_index, now, deadline, yield_,
                        *pass_);
    if (r.status == 0) return std::nullopt;
    pass_.reset();
    step.method = method_of(req);
    const bool whole = parser.is_done();
    const bool keep_alive = whole && req.keep_alive() && !ctx_.state->closing();
    const bool written = send(r, keep_alive, step.method == "HEAD");
    finish(r, step.method, step.started);
    body_unread_ = !whole;
    return written && keep_alive;
  }

  [[gnu::noinline]] void begin_trace(parser_type& parser) {
    trace_ = std::make_unique<trace_record>(
        ctx_.tracing->begin(header(parser.get(), "traceparent"), header(parser.get(), "tracestate")));
  }

  [[gnu::noinline]] bool pass_through_or_refuse(parser_type& parser, request_step& step) {
    if (control_.reason() == cancel_reason::none) return pass_through(step);
    // Cancelled (drain, shutdown) before its exchange began: not sent, and the connection closes.
    refuse_head(parser, step, 503, "shutting down", step.route.index());
    return false;
  }

  // Refuses a request from its head alone (its body, if any, unread), answering `status` with `why`; the
  // connection ends.
  void refuse_head(parser_type& parser, request_step& step, unsigned status, std::string_view why,
                   int route = -1) {
    auto r = error_response(status, why, make_request_id(header(parser.get(), "X-Request-Id")));
    r.route = route;
    step.method = method_of(parser.get());
    refuse(r, step);
    body_unread_ = !parser.is_done();
  }

  // True when the request's framing is refused (the connection ends).
  [[gnu::noinline]] bool refused_framing(parser_type& parser, const request_step& step) {
    const auto r = framing_refusal(parser.get());
    if (r.status == 0) return false;
    refuse(r, step);
    body_unread_ = true;
    return true;
  }

  // A new parser per request (Beast's parsers cannot be reset). The head is read first; a body only when
  // the route takes one (read_body): within max_body_bytes for an aggregate route (a Content-Length above
  // it is refused from the head), streamed for a pass-through route (within its proxy.max_body_bytes).
  parser_type& new_request() {
    auto& parser = current_.emplace();
    kept_head_.reset();
    parser.header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
    parser.body_limit(boost::none);
    return parser;
  }

  read_result read_head(parser_type& parser) {
    listed_.set_idle(!io_.buffered());
    // A new connection's first request must start within header_timeout of the accept: a client that
    // connects and sends nothing must not hold a connection slot for the whole idle_timeout.
    auto idle = first_request_ ? std::min<clock::duration>(limits_.idle_timeout, limits_.header_timeout)
                               : clock::duration(limits_.idle_timeout);
    if (ctx_.state->closing()) idle = std::min<clock::duration>(idle, drain_idle_grace);
    first_request_ = false;
    auto read = io_.read_request(parser, clock::now() + idle, limits_.header_timeout, arriving_, yield_);
    listed_.set_idle(false);
    listed_.set_fresh(false);
    return read;
  }

  // The edge's refusals (fields, target) before anything else looks at the head; the target is canonical
  // from here on. True when the request was refused (the connection ends).
  [[gnu::noinline]] bool refused_at_edge(parser_type& parser, request_step& step) {
    const auto why = admit_head(parser.get());
    if (why.empty()) return false;
    refuse_head(parser, step, 400, why);
    return true;
  }

  // The one route lookup of the request: every later step takes its answer from `step.route`.
  void classify(const http::request<http::string_body>& req, request_step& step) {
    step.route =
        handler().classify(method_of(req), std::string_view(req.target().data(), req.target().size()));
  }

  // A body: read on when the route takes one and it fits max_body_bytes; otherwise answered from the head
  // alone (a framing error, else 404, 405 or 413), and the connection closed without reading it. False
  // when the connection ends.
  [[gnu::noinline]] bool read_body(parser_type& parser, read_result& read, request_step& step) {
    const auto& req = parser.get();
    step.method = method_of(req);
    auto r = framing_refusal(req);
    if (r.status == 0 && handler().takes_body(step.route)) {
      // The parser refuses a Content-Length over its body limit before it marks the head done.
      if (!parser.is_header_done() ||
          (parser.content_length() && *parser.content_length() > limits_.max_body_bytes)) {
        r = handler().refuse_body(step.route, header(req, "X-Request-Id"),
                                  "request body larger than limits.max_body_bytes");
      } else {
        parser.body_limit(limits_.max_body_bytes);
        if (iequals(header(req, "Expect"), "100-continue") &&
            !io_.send("HTTP/1.1 100 Continue\r\n\r\n", {}, limits_.write_timeout, yield_))
          return false;
        read = io_.read_request(
            parser, clock::now() + limits_.header_timeout, limits_.header_timeout, [] {}, yield_, true);
        step.received = clock::now();
      }
    } else if (r.status == 0) {
      r = handler().refuse_body(step.route, header(req, "X-Request-Id"));
    }
    if (r.status == 0) return true;
    refuse(r, step);
    body_unread_ = true;
    return false;
  }

  // A read that failed: the answer the client still deserves, if any (the connection ends).
  [[gnu::noinline]] void answer_read_error(const parser_type& parser, const error_code& ec,
                                           clock::time_point started) {
    const auto error_status = status_for_read_error(ec);
    if (error_status == 0 || control_.reason() != cancel_reason::none) return;
    // The head may be cut or unread: an id of the gateway's own unless a whole head gave one.
    auto r = error_response(
        error_status, error_status == 400 ? "malformed HTTP request" : reason_phrase(error_status),
        make_request_id(parser.is_header_done() ? header(parser.get(), "X-Request-Id") : std::string_view()));
    send(r, false, parser.get().method() == http::verb::head);
    finish(r, "-", started);
    body_unread_ = error_status == 413;  // a chunked body cut at the limit
  }

  // An aggregate request (or a refusal: 404, 405, OPTIONS) read whole: shed, handled, answered.
  bool handle(const http::request<http::string_body>& req, const request_step& step) {
    // Nothing pipelined behind this request: free the read buffer while the request runs and the
    // connection then idles (a few hundred bytes to allocate again for the next request).
    io_.release_buffer();
    const beast_headers<http::request<http::string_body>> fields(req);
    const auto in = inbound_of(req, fields, step);
    const bool head_only = step.method == "HEAD";
    if (auto r = shed(step.route.index(), in.request_id)) {
      const bool keep_alive = req.keep_alive() && !ctx_.state->closing();
      const bool written = send(*r, keep_alive, head_only);
      finish(*r, step.method, step.started);
      return written && keep_alive;
    }
    io_.watch_peer([this] { control_.cancel(cancel_reason::client_gone); });
    auto response = handler().handle(in, step.route, ctx_.thread_index, control_, yield_);
    io_.stop_watch();
    ctx_.state->inflight.fetch_sub(1, std::memory_order_relaxed);
    if (io_.peer_closed() || control_.reason() == cancel_reason::client_gone) {
      ctx_.metrics->client_disconnect();
      response.status = 499;  // nginx's "client closed request", for the log and the metrics only
      response.body.clear();  // nothing was written
      response.degraded.clear();
      finish(response, step.method, step.started);
      return false;
    }
    return respond(req, response, step, head_only);
  }

  inbound_request inbound_of(const http::request<http::string_body>& req, const client_headers& fields,
                             const request_step& step) {
    inbound_request in;
    in.received = step.received;
    in.method = step.method;
    in.target = std::string_view(req.target().data(), req.target().size());
    in.request_id = header(req, "X-Request-Id");
    in.traceparent = header(req, "traceparent");
    in.timeout_ms = header(req, "X-Request-Timeout-Ms");
    in.envoy_timeout_ms = header(req, "x-envoy-expected-rq-timeout-ms");
    in.body = std::string_view(req.body().data(), req.body().size());
    in.headers = &fields;
    in.origin = {peer_.address, peer_.trusted, tls};
    in.trace = trace_.get();
    in.brief_calls = ctx_.log != nullptr;
    in.accept_encoding = list_header(req, http::field::accept_encoding, accept_encoding_);
    in.pass = pass_ ? &*pass_ : nullptr;
    return in;
  }

  // The answer written, the request logged; true when the connection takes another request.
  bool respond(const http::request<http::string_body>& req, const outbound_response& response,
               const request_step& step, bool head_only) {
    // An HTTP/1.0 request with Transfer-Encoding has faulty framing: answered, then closed (RFC 9112 6.1).
    const bool keep_alive = req.keep_alive() && control_.reason() == cancel_reason::none &&
                            !ctx_.state->closing() &&
                            !(req.version() < 11 && req.count(http::field::transfer_encoding) != 0);
    const bool written = send(response, keep_alive, head_only);
    finish(response, step.method, step.started);
    return written && keep_alive;
  }

  // A request of a pass-through route (proxy_exchange), from its head on; false when the connection ends.
  bool pass_through(const request_step& step) {
    auto& parser = *current_;
    const auto& req = parser.get();
    const int route = step.route.index();
    // A copy: run_proxy moves the head, and the method's text with it, into a parser of its own.
    const std::string method(method_of(req));
    request_step logged;
    logged.started = step.started;
    logged.method = method;
    if (auto r = framing_refusal(req); r.status != 0) {
      refuse(r, logged);
      body_unread_ = true;
      return false;
    }
    if (auto r = shed(route, header(req, "X-Request-Id"))) {
      refuse(*r, logged);  // the body, if any, is left unread: the connection ends
      body_unread_ = !parser.is_done();
      return false;
    }
    keep_head(req);  // run_proxy takes the head over
    auto result = run_proxy(io_, parser, *generation_, route, ctx_, {peer_.address, peer_.trusted, tls},
                            control_, trace_.get(), pass_ ? &*pass_ : nullptr, yield_);
    ctx_.state->inflight.fetch_sub(1, std::memory_order_relaxed);
    generation_->metrics.proxy_bytes(ctx_.thread_index, static_cast<std::size_t>(route),
                                     result.uploaded_bytes, result.sent_bytes);
    body_unread_ = result.body_unread;
    auto& r = result.answer;
    if (r.status != 0 && !send(r, false, method == "HEAD")) result.status = 499;
    r.route = route;
    r.status = result.status;
    if (result.status == 499) ctx_.metrics->client_disconnect();
    finish(r, method, step.started, r.body.empty() ? result.sent_bytes : r.body.size());
    return result.keep_alive && result.status != 499;
  }

  // Load shedding: beyond max_inflight, or while the buffered answers fill the memory budget, a request is
  // answered 503 at once, without any downstream call. Null when it is admitted (counted in flight).
  std::optional<outbound_response> shed(int route, std::string_view incoming_id) {
    const bool over_budget = memory_budget::exhausted();
    if (ctx_.state->inflight.fetch_add(1, std::memory_order_relaxed) < limits_.max_inflight && !over_budget)
      return std::nullopt;
    ctx_.state->inflight.fetch_sub(1, std::memory_order_relaxed);
    ctx_.metrics->shed(over_budget ? shed_reason::memory_budget : shed_reason::max_inflight);
    auto r = error_response(
        503, over_budget ? "overloaded: memory budget exhausted" : "overloaded: too many requests in flight",
        make_request_id(incoming_id));
    r.route = route;
    return r;
  }

  // An answer after which the connection ends: written (the head alone to HEAD), then logged.
  void refuse(const outbound_response& r, const request_step& step) {
    send(r, false, step.method == "HEAD");
    finish(r, step.method, step.started);
  }

  // An answer to HEAD is the head alone, with the Content-Length a GET would get (RFC 9110 9.3.2).
  bool send(const outbound_response& r, bool keep_alive, bool head_only) {
    return io_.send(head_of(r, keep_alive, ctx_.config->server.compression.enabled),
                    head_only ? std::string_view() : std::string_view(r.body), limits_.write_timeout, yield_);
  }

  // The request's end: its span, its metrics, its access line. `bytes`: of the answer's body, when not
  // r.body (a pass-through answer's).
  void finish(const outbound_response& r, std::string_view method, clock::time_point started,
              std::size_t bytes = std::string::npos) {
    const auto elapsed = clock::now() - started;
    trace_hex_.clear();
    if (trace_) {
      if (ctx_.log) trace_hex_ = to_hex(trace_->trace);
      end_trace(*trace_, r, method, *generation_, *ctx_.tracing);
    }
    trace_.reset();
    generation_->metrics.request_done(ctx_.thread_index, r.route, method, r.status, elapsed);
    if (ctx_.log) log_access(r, method, elapsed, bytes);
  }

  void log_access(const outbound_response& r, std::string_view method, clock::duration elapsed,
                  std::size_t bytes) {
    access_entry e;
    e.time = std::chrono::system_clock::now();
    e.request_id = r.request_id;
    e.method = method;
    const route_settings* route =
        r.route >= 0 ? &generation_->config->routes[static_cast<std::size_t>(r.route)] : nullptr;
    e.route = route != nullptr ? std::string_view(route->path) : std::string_view("unmatched");
    e.status = r.status;
    e.duration_ms = std::chrono::duration<double, std::milli>(elapsed).count();
    e.degraded = r.degraded;
    e.bytes = bytes != std::string::npos ? bytes : r.body.size();
    e.client = client_;
    e.trace_id = trace_hex_;
    log_head_fields(e);
    const auto* aggregate = route != nullptr ? route->aggregate() : nullptr;
    if (aggregate != nullptr && r.calls.size() == aggregate->calls.size()) {
      e.calls = r.calls;
      e.calls_of = aggregate;
    }
    ctx_.log->write(ctx_.thread_index, e);
  }

  // What the request's head says, when it was read: target, user agent, trace and forwarded client.
  void log_head_fields(access_entry& e) {
    const bool from_current = !kept_head_ && current_ && current_->is_header_done();
    if (!kept_head_ && !from_current) return;
    std::string_view incoming_trace;
    std::string_view forwarded;
    if (kept_head_) {
      e.target = kept_head_->target;
      e.user_agent = kept_head_->user_agent;
      incoming_trace = kept_head_->traceparent;
      forwarded = kept_head_->forwarded_for;
    } else {
      const auto& req = current_->get();
      e.target = std::string_view(req.target().data(), req.target().size());
      e.user_agent = header(req, "User-Agent");
      incoming_trace = header(req, "traceparent");
      if (peer_.trusted) forwarded = list_header(req, std::string_view("X-Forwarded-For"), forwarded_for_);
    }
    if (e.trace_id.empty() && incoming_trace.size() == 55 && parse_traceparent(incoming_trace))
      e.trace_id = incoming_trace.substr(3, 32);
    if (peer_.trusted) {
      const auto by_proxy = forwarded_client(forwarded, ctx_.config->server.trusted_proxies);
      if (!by_proxy.empty()) {
        e.client = by_proxy;
        e.proxy = client_;
      }
    }
  }

  void keep_head(const http::request<http::string_body>& req) {
    if (!ctx_.log) return;
    kept_head_ = std::make_unique<logged_head>();
    kept_head_->target.assign(req.target().data(), req.target().size());
    kept_head_->user_agent = header(req, "User-Agent");
    kept_head_->traceparent = header(req, "traceparent");
    if (peer_.trusted)
      kept_head_->forwarded_for = list_header(req, std::string_view("X-Forwarded-For"), forwarded_for_);
  }

  // The connection's end: close_notify over TLS; else a lingering close when a body was left unread.
  void close() {
    error_code ec;
    if constexpr (tls) {
      io_.close(limits_.write_timeout, yield_);
    } else {
      socket_.shutdown(net::ip::tcp::socket::shutdown_send, ec);
      if (body_unread_) {
        listed_.set_idle(true);  // nothing more is owed to it: a drain closes it at once
        io_.linger(ctx_.state->closing() ? drain_idle_grace : linger_time, linger_bytes, yield_);
      }
      socket_.close(ec);
    }
  }

  static std::string_view method_of(const http::request<http::string_body>& req) {
    return std::string_view(req.method_string().data(), req.method_string().size());
  }

  net::ip::tcp::socket& socket_;
  transport& io_;
  const session_context& ctx_;
  const limits_settings& limits_;
  net::yield_context yield_;
  const peer_info peer_;
  const std::string client_;  // "address:port" for the access log; empty when it is off
  request_control control_;   // cancels the request being handled (client gone, drain, shutdown)
  session_registry::membership listed_;
  const std::function<void()> arriving_;  // a request starts to arrive: no longer idle
  // The configuration the current request runs on (see config_generation.hpp); kept while the connection
  // idles, taken anew when another request finds a newer one.
  std::shared_ptr<const config_generation> generation_;
  // On the heap, when used: in place they would take the stack past two pages (serve_one).
  std::unique_ptr<trace_record> trace_;  // the current request's spans, when tracing is on
  std::optional<parser_type> current_;   // the request being read or handled
  std::unique_ptr<logged_head> kept_head_;
  std::string trace_hex_;          // the access log's trace id of a traced request
  std::string forwarded_for_;      // several X-Forwarded-For fields joined (rare)
  std::string accept_encoding_;    // several Accept-Encoding fields joined (rare)
  std::optional<edge_pass> pass_;  // the current request's identity, when its route has a front door
  bool body_unread_ = false;       // the connection ends with a request's body not read whole: linger
  bool first_request_ = true;
};

// One frame per transport: with both in run_session's, a plain connection's stack would hold a TLS
// connection's objects too.
template <class transport, class... transport_args>
[[gnu::noinline]] void serve_connection(net::ip::tcp::socket& socket, const session_context& ctx,
                                        net::yield_context yield, transport_args&&... args) {
  transport io(socket, std::forward<transport_args>(args)...);
  connection<transport>(socket, io, ctx, yield).run();
}

}  // namespace

void run_session(net::ip::tcp::socket socket, const session_context& ctx, net::yield_context yield) {
  session_counted counted(ctx);  // ctx.state->connections was counted up by the acceptor
  const std::size_t buffer_limit = ctx.config->limits.max_header_bytes + 4096;  // a head and what follows
  if (ctx.tls != nullptr) {
    serve_connection<tls_client_io>(socket, ctx, yield, ctx.tls->current(), buffer_limit);
  } else {
    serve_connection<client_io>(socket, ctx, yield, buffer_limit);
  }
}

}  // namespace gateway
