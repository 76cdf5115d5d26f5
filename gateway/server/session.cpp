#include "gateway/server/session.hpp"

#include "gateway/observe/tracing.hpp"
#include "gateway/trace/span_attributes.hpp"

#include "gateway/codec/http_text.hpp"
#include "gateway/runtime/memory_budget.hpp"
#include "gateway/server/beast_headers.hpp"
#include "gateway/server/client_io.hpp"
#include "gateway/server/proxy_exchange.hpp"
#include "gateway/server/request_framing.hpp"
#include "gateway/server/response_head.hpp"
#include "gateway/server/tls_client_io.hpp"
#include "gateway/tls/certificate_reloader.hpp"

#include <boost/beast/http/error.hpp>

#include <algorithm>
#include <iterator>
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
  if (status == 0) return outbound_response{.status = 0};
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
  p.trusted = std::any_of(server.trusted_proxies.begin(), server.trusted_proxies.end(),
                          [&](const ip_network& n) { return n.contains(p.address); });
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

// The connection's loop over its transport: client_io (plain TCP) or tls_client_io, which have the same
// operations; a TLS connection also has its handshake first and its close_notify last.
template <class transport>
void serve(net::ip::tcp::socket& socket, transport& io, const session_context& ctx,
           net::yield_context yield) {
  constexpr bool tls = std::is_same_v<transport, tls_client_io>;
  const auto& limits = ctx.config->limits;
  error_code ec;
  socket.set_option(net::ip::tcp::no_delay(true), ec);
  const bool needs_peer = ctx.log || ctx.config->server.forwarded != forwarded_style::none;
  const auto peer = needs_peer ? peer_of(socket, ctx.config->server) : peer_info{};
  const std::string client = !ctx.log               ? std::string()
                             : peer.address.empty() ? "-"
                                                    : peer.address + ":" + std::to_string(peer.port);
  request_control control;
  session_registry::membership listed(*ctx.registry, {&socket, &control});
  if constexpr (tls) {
    listed.set_idle(true);  // no request yet: a drain closes it like a connection waiting for one
    if (!handshake(io, ctx, yield)) {
      socket.close(ec);
      return;
    }
  }

  // `bytes`: of the answer's body, when not r.body (a pass-through answer's).
  // The configuration the current request runs on (see config_generation.hpp); kept while the connection
  // idles, taken anew when another request finds a newer one.
  std::shared_ptr<const config_generation> generation;
  std::optional<trace_record> trace;  // the current request's spans, when tracing is on
  std::optional<http::request_parser<http::string_body>> current;  // the request being read or handled
  std::string trace_hex;  // the access log's trace id of a traced request
  std::string forwarded_for;
  // What the access log takes from a request's head. A pass-through exchange moves the head into a
  // parser of its own: its fields are copied here first (`kept_head`), else they are read from `current`.
  struct logged_head {
    std::string target;
    std::string user_agent;
    std::string traceparent;
    std::string forwarded_for;
  };
  std::optional<logged_head> kept_head;
  const auto keep_head = [&](const http::request<http::string_body>& req) {
    if (!ctx.log) return;
    kept_head.emplace();
    kept_head->target.assign(req.target().data(), req.target().size());
    kept_head->user_agent = header(req, "User-Agent");
    kept_head->traceparent = header(req, "traceparent");
    if (peer.trusted)
      kept_head->forwarded_for = list_header(req, std::string_view("X-Forwarded-For"), forwarded_for);
  };
  auto finish = [&](const outbound_response& r, std::string_view method, clock::time_point started,
                    std::size_t bytes = std::string::npos) {
    const auto elapsed = clock::now() - started;
    trace_hex.clear();
    if (trace) {
      if (ctx.log) trace_hex = to_hex(trace->trace);
      end_trace(*trace, r, method, *generation, *ctx.tracing);
    }
    trace.reset();
    generation->metrics.request_done(ctx.worker, r.route, method, r.status, elapsed);
    if (!ctx.log) return;
    access_entry e;
    e.time = std::chrono::system_clock::now();
    e.request_id = r.request_id;
    e.method = method;
    const route_settings* route =
        r.route >= 0 ? &generation->config->routes[static_cast<std::size_t>(r.route)] : nullptr;
    e.route = route != nullptr ? std::string_view(route->path) : std::string_view("unmatched");
    e.status = r.status;
    e.duration_ms = std::chrono::duration<double, std::milli>(elapsed).count();
    e.degraded = r.degraded;
    e.bytes = bytes != std::string::npos ? bytes : r.body.size();
    e.client = client;
    e.trace_id = trace_hex;
    const bool from_current = !kept_head && current && current->is_header_done();
    if (kept_head || from_current) {  // what the request's head says
      std::string_view incoming_trace;
      std::string_view forwarded;
      if (kept_head) {
        e.target = kept_head->target;
        e.user_agent = kept_head->user_agent;
        incoming_trace = kept_head->traceparent;
        forwarded = kept_head->forwarded_for;
      } else {
        const auto& req = current->get();
        e.target = std::string_view(req.target().data(), req.target().size());
        e.user_agent = header(req, "User-Agent");
        incoming_trace = header(req, "traceparent");
        if (peer.trusted) forwarded = list_header(req, std::string_view("X-Forwarded-For"), forwarded_for);
      }
      if (e.trace_id.empty() && incoming_trace.size() == 55 && parse_traceparent(incoming_trace))
        e.trace_id = incoming_trace.substr(3, 32);
      if (peer.trusted) {
        const auto by_proxy = forwarded_client(forwarded, ctx.config->server.trusted_proxies);
        if (!by_proxy.empty()) {
          e.client = by_proxy;
          e.proxy = client;
        }
      }
    }
    if (route != nullptr && r.calls.size() == route->calls.size()) {
      e.calls = r.calls;
      e.calls_of = route;
    }
    ctx.log->write(ctx.worker, e);
  };
  // An answer to HEAD is the head alone, with the Content-Length a GET would get (RFC 9110 9.3.2).
  auto send = [&](const outbound_response& r, bool keep_alive, bool head_only = false) {
    return io.send(head_of(r, keep_alive, ctx.config->server.compression.enabled),
                   head_only ? std::string_view() : std::string_view(r.body), limits.write_timeout, yield);
  };
  const std::function<void()> arriving = [&listed] { listed.set_idle(false); };
  // Load shedding: beyond max_inflight, or while the buffered answers fill the memory budget, a request is
  // answered 503 at once, without any downstream call. Null when it is admitted (counted in flight).
  const auto shed = [&](int route, std::string_view incoming_id) -> std::optional<outbound_response> {
    const bool over_budget = memory_budget::exhausted();
    if (ctx.state->inflight.fetch_add(1, std::memory_order_relaxed) < limits.max_inflight && !over_budget)
      return std::nullopt;
    ctx.state->inflight.fetch_sub(1, std::memory_order_relaxed);
    ctx.metrics->shed(over_budget ? shed_reason::memory_budget : shed_reason::max_inflight);
    auto r = error_response(
        503, over_budget ? "overloaded: memory budget exhausted" : "overloaded: too many requests in flight",
        make_request_id(incoming_id));
    r.route = route;
    return r;
  };
  bool body_unread = false;  // the connection ends with a request's body not read whole: linger
  // A request of a pass-through route (proxy_exchange), from its head on; false when the connection ends.
  const auto pass_through = [&](int route, const std::string& method, clock::time_point started) {
    auto& parser = *current;
    const auto& req = parser.get();
    if (auto r = framing_refusal(req); r.status != 0) {
      send(r, false, method == "HEAD");
      finish(r, method, started);
      body_unread = true;
      return false;
    }
    if (auto r = shed(route, header(req, "X-Request-Id"))) {
      send(*r, false, method == "HEAD");  // the body, if any, is left unread: the connection ends
      finish(*r, method, started);
      body_unread = !parser.is_done();
      return false;
    }
    keep_head(req);  // run_proxy takes the head over
    auto result = run_proxy(io, parser, *generation, route, ctx, {peer.address, peer.trusted, tls}, control,
                            trace ? &*trace : nullptr, yield);
    ctx.state->inflight.fetch_sub(1, std::memory_order_relaxed);
    generation->metrics.proxy_bytes(ctx.worker, static_cast<std::size_t>(route), result.uploaded_bytes,
                                    result.sent_bytes);
    body_unread = result.body_unread;
    auto& r = result.answer;
    if (r.status != 0 && !send(r, false, method == "HEAD")) result.status = 499;
    r.route = route;
    r.status = result.status;
    if (result.status == 499) ctx.metrics->client_disconnect();
    finish(r, method, started, r.body.empty() ? result.sent_bytes : r.body.size());
    return result.keep_alive && result.status != 499;
  };
  bool first_request = true;
  std::string accept_encoding;  // several Accept-Encoding fields joined (rare)

  for (;;) {
    auto& parser = current.emplace();  // a new one per request (Beast's parsers cannot be reset)
    kept_head.reset();
    parser.header_limit(static_cast<std::uint32_t>(limits.max_header_bytes));
    // The head is read first; a body only when the route takes one (see below): within max_body_bytes
    // for an aggregate route (a Content-Length above it is refused from the head), streamed for a
    // pass-through route (within its proxy.max_body_bytes).
    parser.body_limit(boost::none);
    listed.set_idle(!io.buffered());
    // A new connection's first request must start within header_timeout of the accept: a client that
    // connects and sends nothing must not hold a connection slot for the whole idle_timeout.
    auto idle = first_request ? std::min<clock::duration>(limits.idle_timeout, limits.header_timeout)
                              : clock::duration(limits.idle_timeout);
    if (ctx.state->closing) idle = std::min<clock::duration>(idle, drain_idle_grace);
    first_request = false;
    auto read = io.read_request(parser, clock::now() + idle, limits.header_timeout, arriving, yield);
    listed.set_idle(false);
    listed.set_fresh(false);
    const auto started = clock::now();
    if (auto now = ctx.generation->load(); generation != now) generation = std::move(now);  // a reload's
    const auto& handler = *generation->handler;
    auto received = started;  // the deadline counts from the whole request: after a body, from its end
    const bool head_read = read.ok || (read.ec == http::error::body_limit && parser.is_header_done());
    // The edge's refusals (fields, target) before anything else looks at the head; the target is
    // canonical from here on.
    if (head_read && control.reason() == cancel_reason::none) {
      if (const auto why = admit_head(parser.get()); !why.empty()) {
        auto r = error_response(400, why, make_request_id(header(parser.get(), "X-Request-Id")));
        const std::string_view method(parser.get().method_string().data(),
                                      parser.get().method_string().size());
        send(r, false, method == "HEAD");
        finish(r, method, started);
        body_unread = !parser.is_done();
        break;
      }
    }
    if (ctx.tracing != nullptr && head_read)
      trace.emplace(
          ctx.tracing->begin(header(parser.get(), "traceparent"), header(parser.get(), "tracestate")));
    // Only a configuration with pass-through routes looks for one (another routing per request).
    if (handler.has_proxy_routes() && head_read && control.reason() == cancel_reason::none) {
      const auto& req = parser.get();
      const std::string method(req.method_string().data(), req.method_string().size());
      const int proxy =
          handler.proxy_route(method, std::string_view(req.target().data(), req.target().size()));
      if (proxy >= 0) {
        if (!pass_through(proxy, method, started)) break;
        continue;
      }
    }
    if (!read.ok && read.ec == http::error::body_limit && control.reason() == cancel_reason::none) {
      // A body: read on when the route takes one and it fits max_body_bytes; otherwise answered from the
      // head alone (a framing error, else 404, 405 or 413), and the connection closed without reading it.
      const auto& req = parser.get();
      const std::string_view method(req.method_string().data(), req.method_string().size());
      const std::string_view target(req.target().data(), req.target().size());
      auto r = framing_refusal(req);
      if (r.status == 0 && handler.takes_body(method, target)) {
        // The parser refuses a Content-Length over its body limit before it marks the head done.
        if (!parser.is_header_done() ||
            (parser.content_length() && *parser.content_length() > limits.max_body_bytes)) {
          r = handler.refuse_body(method, target, header(req, "X-Request-Id"),
                                  "request body larger than limits.max_body_bytes");
        } else {
          parser.body_limit(limits.max_body_bytes);
          if (iequals(header(req, "Expect"), "100-continue") &&
              !io.send("HTTP/1.1 100 Continue\r\n\r\n", {}, limits.write_timeout, yield))
            break;
          read = io.read_request(
              parser, clock::now() + limits.header_timeout, limits.header_timeout, [] {}, yield, true);
          received = clock::now();
        }
      } else if (r.status == 0) {
        r = handler.refuse_body(method, target, header(req, "X-Request-Id"));
      }
      if (r.status != 0) {
        send(r, false, method == "HEAD");
        finish(r, method, started);
        body_unread = true;
        break;
      }
    }
    if (!read.ok) {
      const auto error_status = status_for_read_error(read.ec);
      if (error_status != 0 && control.reason() == cancel_reason::none) {
        // The head may be cut or unread: an id of the gateway's own unless a whole head gave one.
        auto r = error_response(error_status,
                                error_status == 400 ? "malformed HTTP request" : reason_phrase(error_status),
                                make_request_id(parser.is_header_done() ? header(parser.get(), "X-Request-Id")
                                                                        : std::string_view()));
        send(r, false, parser.get().method() == http::verb::head);
        finish(r, "-", started);
        body_unread = error_status == 413;  // a chunked body cut at the limit
      }
      break;
    }
    const auto& req = parser.get();  // its strings live in the parser, not in the read buffer
    const std::string_view method(req.method_string().data(), req.method_string().size());
    if (auto r = framing_refusal(req); r.status != 0) {
      send(r, false, method == "HEAD");
      finish(r, method, started);
      body_unread = true;
      break;
    }
    // Nothing pipelined behind this request: free the read buffer while the request runs and the
    // connection then idles (a few hundred bytes to allocate again for the next request).
    io.release_buffer();
    inbound_request in;
    in.received = received;
    in.method = method;
    const bool head_only = method == "HEAD";
    in.target = std::string_view(req.target().data(), req.target().size());
    in.request_id = header(req, "X-Request-Id");
    in.traceparent = header(req, "traceparent");
    in.timeout_ms = header(req, "X-Request-Timeout-Ms");
    in.envoy_timeout_ms = header(req, "x-envoy-expected-rq-timeout-ms");
    in.body = std::string_view(req.body().data(), req.body().size());
    const beast_headers<http::request<http::string_body>> fields(req);
    in.headers = &fields;
    in.origin = {peer.address, peer.trusted, tls};
    if (trace) in.trace = &*trace;
    in.brief_calls = ctx.log != nullptr;
    in.accept_encoding = list_header(req, http::field::accept_encoding, accept_encoding);

    if (auto r = shed(handler.route_index(in.method, in.target), in.request_id)) {
      const bool keep_alive = req.keep_alive() && !ctx.state->closing;
      const bool written = send(*r, keep_alive, head_only);
      finish(*r, in.method, started);
      if (!written || !keep_alive) break;
      continue;
    }

    io.watch_peer([&control] { control.cancel(cancel_reason::client_gone); });
    auto response = handler.handle(in, ctx.worker, control, yield);
    io.stop_watch();
    ctx.state->inflight.fetch_sub(1, std::memory_order_relaxed);
    if (io.peer_closed() || control.reason() == cancel_reason::client_gone) {
      ctx.metrics->client_disconnect();
      response.status = 499;  // nginx's "client closed request", for the log and the metrics only
      response.body.clear();  // nothing was written
      response.degraded.clear();
      finish(response, in.method, started);
      break;
    }

    // An HTTP/1.0 request with Transfer-Encoding has faulty framing: answered, then closed (RFC 9112 6.1).
    const bool keep_alive = req.keep_alive() && control.reason() == cancel_reason::none &&
                            !ctx.state->closing &&
                            !(req.version() < 11 && req.count(http::field::transfer_encoding) != 0);
    const bool written = send(response, keep_alive, head_only);
    finish(response, in.method, started);
    if (!written || !keep_alive) break;
  }
  if constexpr (tls) {
    io.close(limits.write_timeout, yield);
  } else {
    socket.shutdown(net::ip::tcp::socket::shutdown_send, ec);
    if (body_unread) {
      listed.set_idle(true);  // nothing more is owed to it: a drain closes it at once
      io.linger(ctx.state->closing ? drain_idle_grace : linger_time, linger_bytes, yield);
    }
    socket.close(ec);
  }
}

}  // namespace

void run_session(net::ip::tcp::socket socket, const session_context& ctx, net::yield_context yield) {
  session_counted counted(ctx);  // ctx.state->connections was counted up by the acceptor
  const std::size_t buffer_limit = ctx.config->limits.max_header_bytes + 4096;  // a head and what follows
  if (ctx.tls != nullptr) {
    tls_client_io io(socket, ctx.tls->current(), buffer_limit);
    serve(socket, io, ctx, yield);
  } else {
    client_io io(socket, buffer_limit);
    serve(socket, io, ctx, yield);
  }
}

}  // namespace gateway
