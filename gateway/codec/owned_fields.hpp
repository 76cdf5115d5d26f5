#pragma once
// The one list of request header fields that are the gateway's to write towards a downstream. A client
// never sets them: whatever it sent in them is dropped (identity fields from an untrusted peer) or
// replaced, and a configuration's header policy may not forward or set them. Pure data.
//
// - framing and hop-by-hop fields (core/http_text.hpp, hop_by_hop_fields) describe one connection or one
//   message's bytes;
// - identity fields say who the client is, where it connected and which request this is: only a trusted
//   proxy (server.trusted_proxies) may send them, and then only the forwarded style's own are extended;
//   every other peer's are stripped, whatever server.forwarded says;
// - the fields the gateway writes on each aggregate call's head (downstream/request_head.cpp): Host, the
//   Accept and Accept-Encoding it can read, the Content-Type of a body it renders, the time left, and the
//   trace context.

#include "gateway/codec/http_text.hpp"

#include <string_view>

namespace gateway {

// Who the client is, as a proxy in front of the gateway may say (lower-case).
inline constexpr std::string_view identity_fields[] = {"forwarded",
                                                       "x-forwarded-for",
                                                       "x-forwarded-proto",
                                                       "x-forwarded-host",
                                                       "x-forwarded-port",
                                                       "x-forwarded-prefix",
                                                       "x-forwarded-server",
                                                       "x-forwarded-ssl",
                                                       "x-forwarded-scheme",
                                                       "x-real-ip",
                                                       "x-client-ip",
                                                       "true-client-ip",
                                                       "x-original-forwarded-for",
                                                       "x-request-id"};

// The identity fields the forwarded styles write (server.forwarded): a trusted proxy's are extended, not
// passed on as sent (lower-case).
inline constexpr std::string_view forwarded_style_fields[] = {"x-forwarded-for", "x-forwarded-proto",
                                                              "x-forwarded-host", "forwarded"};

// What the gateway itself writes on a downstream request's head besides the framing (lower-case).
inline constexpr std::string_view written_fields[] = {
    "host",        "expect",    "accept", "accept-encoding", "content-type", "x-request-timeout-ms",
    "traceparent", "tracestate"};

// What the gateway writes anew on every request towards a downstream (lower-case): the request's id, its
// trace context and the time left. Left out of the key of shared answers (downstream/share_key.hpp).
inline constexpr std::string_view per_request_fields[] = {"x-request-id", "traceparent", "tracestate",
                                                          "x-request-timeout-ms"};

inline bool identity_field(std::string_view name) {
  return listed_ci(name, identity_fields);
}

// Whether a header policy may not forward or set `name`: framing, identity or written by the gateway.
inline bool gateway_owned(std::string_view name) {
  return listed_ci(name, hop_by_hop_fields) || listed_ci(name, identity_fields) ||
         listed_ci(name, written_fields);
}

}  // namespace gateway
