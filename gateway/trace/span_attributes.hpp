#pragma once
// The attribute names the gateway's spans carry: OpenTelemetry's semantic conventions (HTTP, database),
// then the gateway's own (`gateway.*`). Static storage, as span_attribute::key requires. Plus how
// `url.full` is written. Pure.

#include <string>
#include <string_view>

namespace gateway::span_attributes {

// Semantic conventions (HTTP server and client spans, database client spans).
inline constexpr std::string_view http_request_method = "http.request.method";  // string: "GET"
inline constexpr std::string_view http_route = "http.route";                    // string: the route's path
inline constexpr std::string_view http_response_status_code = "http.response.status_code";  // int
inline constexpr std::string_view http_request_resend_count = "http.request.resend_count";  // int: > 0
inline constexpr std::string_view server_address = "server.address";  // string: the address used
inline constexpr std::string_view server_port = "server.port";        // int
inline constexpr std::string_view url_full = "url.full";              // string: through full_url()
inline constexpr std::string_view db_system = "db.system";            // string: postgresql, sqlite

// The gateway's own.
inline constexpr std::string_view call = "gateway.call";                    // string: the call's name
inline constexpr std::string_view downstream = "gateway.downstream";        // string: the downstream's name
inline constexpr std::string_view outcome = "gateway.outcome";              // string: the call's outcome
inline constexpr std::string_view degraded = "gateway.degraded";            // bool: a fallback was served
inline constexpr std::string_view attempt = "gateway.attempt";              // int: 1, 2, ... in start order
inline constexpr std::string_view hedge = "gateway.hedge";                  // bool: a hedged attempt
inline constexpr std::string_view breaker_state = "gateway.breaker_state";  // string: closed, open, half_open
inline constexpr std::string_view semaphore_wait_ms = "gateway.sql.semaphore_wait_ms";  // double
inline constexpr std::string_view after = "gateway.after";  // string: the calls it waited for, "a,b"
inline constexpr std::string_view after_wait_ms =
    "gateway.after.wait_ms";  // double: from the fan-out's start
inline constexpr std::string_view request_bytes = "gateway.request_bytes";    // int: body bytes sent on
inline constexpr std::string_view response_bytes = "gateway.response_bytes";  // int: body bytes passed back

// `url.full` of a downstream request: `origin` ("http://users:8080"), then `target` ("/v1/users?id=7"),
// whose secret query values are replaced by REDACTED (append_redacted_target: credentials, signatures,
// OAuth codes; the rest as it came).
std::string full_url(std::string_view origin, std::string_view target);

}  // namespace gateway::span_attributes
