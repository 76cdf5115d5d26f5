#pragma once
// The key of every answer a downstream shares between calls: its cache and stale answers (the fan-out's
// answer_cache) and coalescing (call_coalescer), for HTTP and SQL alike. Two calls share an answer only
// when their keys are equal, and their keys are equal exactly when they send the downstream the same
// thing and keep the same fields of its answer. Pure.
//
// In the key:
// - an HTTP call: its method, target (path and query), body, and every header field of
//   call_request::headers as sent (the client fields the header policy passes on and its fixed fields,
//   then the forwarded ones: X-Forwarded-For/-Proto/-Host or Forwarded). With server.forwarded on, answers
//   are therefore kept per client address (X-Forwarded-For) and per Host (X-Forwarded-Host); a call whose
//   answers may be shared across clients removes those fields (its headers.remove).
// - a SQL call: its statement and each name it binds, in position order, with the value bound to it
//   (bound_value(); NULL told apart from every text). Route parameters the statement does not bind, and
//   header fields (a SQL call sends none), are not in it.
// - either: the answer fields the call keeps (call_request::answer_fields), by contents (a reload makes
//   equal policies at new addresses; an empty policy keeps what none keeps), since a shared answer
//   carries them; and, for a call that passes statuses (call_request::pass), those statuses and the
//   fields it keeps of them, since a coalesced follower gets what its leader kept of such an answer.
// Not in the key:
// - what the gateway writes anew for every request (core/owned_fields.hpp, per_request_fields):
//   X-Request-Id, traceparent, tracestate and X-Request-Timeout-Ms. In the key they would make nothing
//   shareable; an answer that depends on one of them says so with Vary and is never shared
//   (freshness.hpp, varies_beyond_key(): call_result::shareable).
// - what every call to the downstream sends alike: the base path and HTTP version of the request line,
//   Host, Accept and Accept-Encoding; Content-Type and Content-Length follow from the method and body.
//
// Unambiguous: after a tag for the kind, each part is its length in decimal, ':' and its bytes, each
// list is preceded by its count and '#', and the parts come in a fixed order, so no two different inputs
// give one key. Computed only by what shares (a downstream with a cache or stale answers, a coalescing
// lane): a call to a downstream without them computes nothing.

#include "gateway/downstream/downstream.hpp"

#include <string>

namespace gateway {

std::string share_key(const call_request& request);

}  // namespace gateway
