#pragma once
// A pass-through route's exchange (route_settings::proxy), run by the connection's coroutine once the
// request's head is read: the request goes to the route's downstream with its method, rewritten path,
// the client's end-to-end fields (the route's header policy applied, the forwarded fields set) and its
// body streamed as it arrives; the downstream's answer comes back the same way, its head together with
// the body's first piece, then the body piece by piece. One buffer of proxy.buffer_bytes serves both
// directions in turn: an identity answer body (a length, or up to the close) is relayed as read through
// all of it; a chunked body, an upload, and the answer's head use half for what is read and half for
// what is written. So an upload or download of any size costs the gateway a fixed amount.
//
// Framing is the gateway's own on each side (RFC 9112): a body with a Content-Length keeps it; a chunked
// one, or one that ends with the downstream's connection, goes to an HTTP/1.1 client chunked (to an
// HTTP/1.0 client, until the close). Hop-by-hop fields (and those a Connection field names) are never
// passed on. `Expect: 100-continue` is answered by the gateway once the downstream has the request's head;
// 1xx answers of the downstream (but 101) reach an HTTP/1.1 client.
//
// A request body that fits half the buffer is read whole before a pooled connection is taken (and sent
// with the head in one write), so that a client sending it slowly holds none meanwhile; a larger one, or
// one whose client expects 100 Continue, streams once the connection is there.
//
// Times: from the request's head, its body must be received and sent whole, and the answer's head must
// arrive, within proxy.timeout (a body not in by then: 408); the connection must be ready within
// proxy.connect_timeout (the downstream's by default) and that timeout; every other wait (reading or
// writing a piece either way, the upload's too) within proxy.idle_timeout. Until the answer's head has
// gone to the client, a failure gets an answer from the gateway (502, 503, 504, or 408 and 413 for the
// client's body; JSON, as for aggregate routes); after it, the client connection is closed (a cut body,
// never a forged end). A connection goes back to the pool only when nothing followed the answer (bytes
// behind a bodiless one included).
//
// While waiting for the downstream, the client connection is watched: a client that goes away cancels
// the exchange (`control`, also fired by the shutdown). A reused pooled connection that fails before any
// of the answer is replaced once, for a request without a body whose method is idempotent.
//
// Traced (`trace` not null), the exchange with the downstream is a client span under the request's
// server span, and the request carries that span's traceparent (and the trace's tracestate) instead of
// the client's. Untraced, both fields go on as the client sent them.

#include "gateway/downstream/call_headers.hpp"
#include "gateway/downstream/downstream.hpp"
#include "gateway/server/client_io.hpp"
#include "gateway/server/config_generation.hpp"
#include "gateway/server/request_handler.hpp"
#include "gateway/server/session_context.hpp"

#include <cstdint>
#include <string>

namespace gateway {

struct proxy_result {
  // The answer the gateway owes when the exchange failed before the downstream's head went out (status
  // 0: the downstream's answer was sent, or nothing can be sent). Its status goes to the log either way.
  outbound_response answer;
  unsigned status = 0;           // sent to the client: the downstream's, the gateway's, or 499 (client gone)
  std::uint64_t sent_bytes = 0;  // answer body bytes written to the client
  std::uint64_t uploaded_bytes = 0;  // request body bytes written to the downstream
  bool body_unread = false;          // the request's body was not read whole: the close should linger
  bool keep_alive = false;           // the connection may take another request
};

// `parser` holds the request's head (its body unread), its framing checked; route `route_index` of
// `generation` is a proxy route; `trace`: the request's spans, null when it is not traced.
// `Io`: client_io or tls_client_io (both built in proxy_exchange.cpp).
template <class Io>
proxy_result run_proxy(Io& io, boost::beast::http::request_parser<boost::beast::http::string_body>& parser,
                       const config_generation& generation, int route_index, const session_context& ctx,
                       const client_origin& origin, request_control& control, trace_record* trace,
                       const edge_pass* pass, boost::asio::yield_context yield);

}  // namespace gateway
