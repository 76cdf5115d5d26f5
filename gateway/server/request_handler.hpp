#pragma once
// Answers one public request: routing, parameter validation, deadline, fan-out, merge, and compression of
// a good answer when the client accepts it (server.compression; on the I/O thread: it is a few
// microseconds per KiB at the default level).
// Runs inside the connection's coroutine; it never throws (a surprise becomes a bare 500).
// Beast-free so that it stays cheap to include and to test.

#include "gateway/aggregate/fanout.hpp"
#include "gateway/config/config.hpp"
#include "gateway/downstream/call_headers.hpp"
#include "gateway/downstream/downstream.hpp"
#include "gateway/observe/metrics.hpp"
#include "gateway/server/router.hpp"
#include "gateway/trace/trace_record.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gateway {

class recent_degraded;
struct edge_pass;

struct inbound_request {
  std::string_view method;
  std::string_view target;
  std::string_view request_id;              // X-Request-Id, may be empty
  std::string_view traceparent;             // may be empty
  std::string_view timeout_ms;              // X-Request-Timeout-Ms, may be empty
  std::string_view envoy_timeout_ms;        // x-envoy-expected-rq-timeout-ms, may be empty
  std::string_view accept_encoding;         // Accept-Encoding (several fields joined), may be empty
  std::string_view body;                    // read only for routes that take one (route.takes_body)
  clock::time_point received;               // when its head was read: the deadline counts from here
  const client_headers* headers = nullptr;  // every header field, for the header policy; null: none
  client_origin origin;                     // who sent it (forwarded headers)
  trace_record* trace = nullptr;            // the request's spans when it is traced (a client span per call)
  bool brief_calls = false;                 // fill outbound_response::calls (the access log is on)
  const edge_pass* pass = nullptr;          // admitted by the route's front door (its identity), if any
};

struct outbound_response {
  int route = -1;  // index of the matched route, -1 when none matched
  unsigned status = 200;
  std::string body;
  std::string_view content_encoding;  // gzip or deflate when `body` is compressed (a static string)
  std::string request_id;
  std::string degraded;  // X-Degraded value
  std::string allow;     // Allow value for 405 (and OPTIONS)
  std::string fields;    // more header lines, "Name: value\r\n" each (CORS, answer fields of the calls)
  std::vector<call_brief> calls;  // with inbound_request::brief_calls: each call of the route, in order
  // The status is a downstream's, passed by a call (pass_status): a 503 then carries the Retry-After the
  // call passed in `fields`, if any, not the gateway's own.
  bool passed = false;
};

// Status 0: no answer decided (yet).
inline outbound_response no_answer() {
  outbound_response r;
  r.status = 0;
  return r;
}

// Lets the connection cancel the request currently being handled (client gone, shutdown).
// A pass-through exchange is cancelled through its cancel_source instead of a fan-out.
class request_control {
 public:
  void attach(fanout* f) { current_ = f; }
  void attach(cancel_source* s) { source_ = s; }
  void detach() {
    current_ = nullptr;
    source_ = nullptr;
  }
  void cancel(cancel_reason why) {
    if (reason_ == cancel_reason::none) reason_ = why;
    if (current_) current_->cancel(why);
    if (source_) source_->request_cancel(why);
  }
  cancel_reason reason() const { return reason_; }

 private:
  fanout* current_ = nullptr;
  cancel_source* source_ = nullptr;
  cancel_reason reason_ = cancel_reason::none;
};

// What a request is, decided once from its method and target (the router's one lookup per request) and
// passed to every later step: read or refuse its body, shed it, handle it, log it.
enum class request_kind : unsigned char {
  aggregate,     // a route with calls: fanned out and merged
  pass_through,  // a proxy route: proxy_exchange takes the request over after its head
  refusal,       // no route: 404, or 405 when the path exists for other methods
};

struct request_route {
  route_lookup found;  // status 200: found.index is the route; 404 or 405 (found.allow) otherwise
  request_kind kind = request_kind::refusal;
  // Into gateway_config::routes, -1 when none matched (a 405 is counted under its path's route: see
  // refuse_body and handle).
  int index() const { return found.status == 200 ? static_cast<int>(found.index) : -1; }
};

class request_handler {
 public:
  // `targets[r][c]` is the downstream of call c of route r; `series` the configuration's metric rows;
  // `recent` (optional, owned by the server) keeps the last degraded responses for the status page.
  request_handler(const gateway_config& config, std::vector<std::vector<downstream*>> targets,
                  metrics_registry& metrics, const metric_set& series, recent_degraded* recent = nullptr);

  // The route of a request, found once; `target` must be canonical (request_framing's admit_head).
  request_route classify(std::string_view method, std::string_view target) const;
  // Answers an aggregate request or a refusal of `route` (classify's, for this request's method and
  // target). OPTIONS is answered here (a CORS preflight, or the methods of the path), never fanned out.
  outbound_response handle(const inbound_request& request, const request_route& route,
                           std::size_t thread_index, request_control& control,
                           boost::asio::yield_context yield) const;
  // Whether the route takes its body (a call passes it on): read it, else refuse it.
  bool takes_body(const request_route& route) const {
    return route.kind == request_kind::aggregate && config_.routes[route.found.index].aggregate()->takes_body;
  }
  // The answer to a request whose body is not read: 404 or 405 as for any request to that path and
  // method, else 413 with `why`; `incoming_id` is the request's X-Request-Id (make_request_id).
  outbound_response refuse_body(const request_route& route, std::string_view incoming_id,
                                std::string_view why = "this route takes no request body") const;
  // A pass-through route's downstream.
  downstream& proxy_target(int route) const { return *targets_[static_cast<std::size_t>(route)].front(); }

 private:
  outbound_response route_request(const inbound_request& request, const route_lookup& found,
                                  std::string request_id, std::size_t thread_index, request_control& control,
                                  boost::asio::yield_context yield) const;
  // The answer from the calls' results (`route` is config_.routes[index]'s): a call's passed answer, a
  // required call's failure, else the merge (degraded calls counted and logged).
  outbound_response answer_of(const inbound_request& request, std::size_t index, const aggregate_route& route,
                              std::vector<call_result>& results, std::string request_id,
                              std::size_t thread_index, const request_control& control) const;
  outbound_response options(const inbound_request& request, const route_lookup& found,
                            std::string request_id) const;

  const gateway_config& config_;
  router router_;
  std::vector<std::vector<downstream*>> targets_;
  metrics_registry& metrics_;
  const metric_set& series_;
  recent_degraded* recent_ = nullptr;
};

// The gateway's own error answer: `status` with the body {"error": message, "request_id": id}, the one
// shape of every refusal and failure the gateway answers itself (a downstream's answer passed on through
// a pass-through route keeps its own).
outbound_response error_response(unsigned status, std::string_view message, std::string request_id);

// What an error answer says of a failure behind the gateway (a required call, a pass-through exchange)
// answered with `status`: `full` as given with error_detail::full; with error_detail::reason only its kind
// ("timeout" for 504, "upstream unavailable" for 503, "upstream failure" otherwise), naming no call and no
// downstream.
std::string_view failure_message(error_detail detail, unsigned status, std::string_view full);
// The incoming id when it is safe to echo ([A-Za-z0-9._:-], 1..128 chars), else a new random one.
std::string make_request_id(std::string_view incoming);

}  // namespace gateway
