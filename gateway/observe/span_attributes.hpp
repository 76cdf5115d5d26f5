#pragma once
// The attribute names the gateway's spans carry: OpenTelemetry's HTTP semantic conventions, then the
// gateway's own (`gateway.*`). Static storage, as span_attribute::key requires. Plus the redaction
// `url.full` needs. Pure.

#include <string>
#include <string_view>

namespace gateway::span_attributes {

// Semantic conventions (HTTP server and client spans).
inline constexpr std::string_view http_request_method = "http.request.method";  // string: "GET"
inline constexpr std::string_view http_route = "http.route";                    // string: the route's path
inline constexpr std::string_view http_response_status_code = "http.response.status_code";  // int
inline constexpr std::string_view server_address = "server.address";  // string: the downstream's host
inline constexpr std::string_view server_port = "server.port";        // int
inline constexpr std::string_view url_full = "url.full";              // string: through redacted_url()

// The gateway's own.
inline constexpr std::string_view call = "gateway.call";                    // string: the call's name
inline constexpr std::string_view outcome = "gateway.outcome";              // string: the call's outcome
inline constexpr std::string_view degraded = "gateway.degraded";            // bool: a fallback was served
inline constexpr std::string_view attempt = "gateway.attempt";              // int: 1 first, 2 retry or hedge
inline constexpr std::string_view breaker_state = "gateway.breaker_state";  // string: closed, open, half_open
inline constexpr std::string_view semaphore_wait_ms = "gateway.semaphore_wait_ms";  // double

// `url` with every query value replaced by REDACTED (names kept: "?id=REDACTED&flag") and userinfo, if
// any, by REDACTED:REDACTED, as the semantic conventions ask of `url.full`. A URL that does not parse
// (RFC 3986 URI reference) loses its whole query and fragment instead.
std::string redacted_url(std::string_view url);

}  // namespace gateway::span_attributes
