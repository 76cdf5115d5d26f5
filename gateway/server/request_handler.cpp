#include "gateway/server/request_handler.hpp"

#include "gateway/aggregate/merge.hpp"
#include "gateway/codec/char_class.hpp"
#include "gateway/codec/compression.hpp"
#include "gateway/codec/json_object.hpp"
#include "gateway/codec/json_text.hpp"
#include "gateway/downstream/answer_fields.hpp"
#include "gateway/downstream/call_trace.hpp"
#include "gateway/observe/recent_degraded.hpp"
#include "gateway/runtime/thread_random.hpp"
#include "gateway/server/cors.hpp"
#include "gateway/server/edge_gate.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <charconv>
#include <memory>
#include <new>
#include <unordered_map>
#include <utility>

namespace gateway {
namespace {

// What the client gets when a required call fails: 504 when it ran out of time, 503 when it was refused
// locally without trying (an open circuit breaker, no capacity), 502 for anything the downstream did.
unsigned required_call_status(call_outcome outcome) {
  switch (outcome) {
    case call_outcome::timeout:
      return 504;
    case call_outcome::circuit_open:
    case call_outcome::rejected:
      return 503;
    default:
      return 502;
  }
}

bool safe_token(std::string_view s, std::size_t max) {
  return !s.empty() && s.size() <= max && char_class::all_of(s, char_class::request_id);
}

// A positive integer header value in milliseconds, or nullopt.
std::optional<long long> header_millis(std::string_view text) {
  long long value = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || p != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// A good answer compressed for a client that accepts gzip or deflate, when it is large enough to gain and
// small enough to take little of the I/O thread; else (and when zlib has no memory, or the result would
// not be smaller) left as it is.
void compress_answer(const compression_settings& settings, std::string_view accept_encoding,
                     outbound_response& r) {
  if (!settings.enabled || accept_encoding.empty() || r.body.size() < settings.min_bytes ||
      r.body.size() > settings.max_bytes) {
    return;
  }
  const auto coding = negotiate_coding(accept_encoding);
  if (coding == content_coding::identity) return;
  std::string packed;
  if (!compress(r.body, coding, static_cast<int>(settings.level), packed) || packed.size() >= r.body.size())
    return;
  r.body = std::move(packed);
  r.content_encoding = to_string(coding);
}

// 204 with `allow` (OPTIONS): no body at all.
outbound_response no_content(std::string allow, std::string request_id) {
  outbound_response r;
  r.status = 204;
  r.allow = std::move(allow);
  r.request_id = std::move(request_id);
  return r;
}

// The answer of a call that passed its downstream's status (pass_status): that status, the downstream's
// JSON object as it came (else the gateway's error naming the call, as error_detail allows), and the
// fields pass_headers named. Not degraded (no fallback was served) and not compressed, like the gateway's
// other error answers.
outbound_response passed_response(const call_settings& call, call_result& result, error_detail detail,
                                  std::string request_id) {
  if (result.body.text.empty()) {
    const auto full = "call '" + call.name + "' answered " + std::to_string(result.status) +
                      " with a body that is not a JSON object";
    auto r =
        error_response(result.status, failure_message(detail, result.status, full), std::move(request_id));
    r.passed = true;
    r.fields = std::move(result.headers);
    return r;
  }
  outbound_response r;
  r.status = result.status;
  r.passed = true;
  r.body = std::move(result.body.text);
  r.fields = std::move(result.headers);
  r.request_id = std::move(request_id);
  return r;
}

// A failed call, in the log at warn with its reason: at most one line per downstream per second on each
// I/O thread, the next one telling how many were left out meanwhile, so that an outage cannot flood the
// log (and the log's queue drops the oldest lines beyond that).
void log_failed_call(std::string_view route, const call_settings& call, const downstream& target,
                     const call_result& result, std::string_view request_id) {
  struct pace {
    clock::time_point next{};
    std::uint64_t left_out = 0;
  };
  thread_local std::unordered_map<const downstream*, pace> paces;
  if (paces.size() > 4096) paces.clear();  // downstreams retired by reloads: bounded
  auto& p = paces[&target];
  const auto now = clock::now();
  if (now < p.next) {
    ++p.left_out;
    return;
  }
  p.next = now + std::chrono::seconds(1);
  const auto left_out = std::exchange(p.left_out, 0);
  const auto label = outcome_label(result.label_index());
  const auto detail = failure_detail(result);
  spdlog::warn("call '{}' of route {} to downstream '{}' failed: {}{}{}{}, request {}{}", call.name, route,
               call.downstream, label, detail != label ? " (" : "", detail != label ? detail : "",
               detail != label ? ")" : "", request_id,
               left_out != 0 ? "; " + std::to_string(left_out) +
                                   " more failed calls to it not logged in the last second"
                             : std::string());
}

// Ends the span of each call (call_trace, made before the fan-out in call order).
void trace_calls(std::vector<call_trace>& traces, const gateway_config& config, const aggregate_route& route,
                 const std::vector<downstream*>& targets, const std::vector<call_result>& results) {
  for (std::size_t i = 0; i < route.calls.size(); ++i)
    traces[i].end(results[i], config.downstreams[route.calls[i].downstream_index], targets[i]->breaker());
}

}  // namespace

outbound_response error_response(unsigned status, std::string_view message, std::string request_id) {
  outbound_response r;
  r.status = status;
  r.body = "{\"error\":";
  append_json_string(r.body, message);
  r.body += ",\"request_id\":";
  append_json_string(r.body, request_id);
  r.body += '}';
  r.request_id = std::move(request_id);
  return r;
}

std::string_view failure_message(error_detail detail, unsigned status, std::string_view full) {
  if (detail == error_detail::full) return full;
  switch (status) {
    case 504:
      return "timeout";
    case 503:
      return "upstream unavailable";
    default:
      return "upstream failure";
  }
}

std::string make_request_id(std::string_view incoming) {
  if (safe_token(incoming, 128)) return std::string(incoming);
  static constexpr char hex[] = "0123456789abcdef";
  std::string id(32, '0');  // 32 lowercase hex digits of two 64-bit draws
  for (std::size_t half = 0; half < 2; ++half) {
    auto bits = thread_random();
    for (std::size_t i = 16; i-- > 0; bits >>= 4) id[half * 16 + i] = hex[bits & 15];
  }
  return id;
}

request_handler::request_handler(const gateway_config& config, std::vector<std::vector<downstream*>> targets,
                                 metrics_registry& metrics, const metric_set& series, recent_degraded* recent)
    : config_(config),
      router_(config.routes),
      targets_(std::move(targets)),
      metrics_(metrics),
      series_(series),
      recent_(recent) {}

request_route request_handler::classify(std::string_view method, std::string_view target) const {
  request_route r{router_.find(method, target)};
  if (r.found.status == 200)
    r.kind = config_.routes[r.found.index].proxy() != nullptr ? request_kind::pass_through
                                                              : request_kind::aggregate;
  return r;
}

namespace {

// 404, or 405 counted and logged under the route whose path matched; status 0 when a route was found.
// `request_id` is taken only for a refusal.
outbound_response unrouted(const route_lookup& found, std::string& request_id) {
  if (found.status == 404) return error_response(404, "no route for this path", std::move(request_id));
  if (found.status != 405) return no_answer();
  auto r = error_response(405, "method not allowed", std::move(request_id));
  r.route = static_cast<int>(found.index);
  r.allow = found.allow;
  return r;
}

std::string client_field(const inbound_request& request, std::string_view name) {
  std::string value;
  if (request.headers != nullptr) request.headers->append(name, value, ", ");
  return value;
}

}  // namespace

outbound_response request_handler::refuse_body(const request_route& route, std::string_view incoming_id,
                                               std::string_view why) const {
  auto request_id = make_request_id(incoming_id);
  if (auto r = unrouted(route.found, request_id); r.status != 0) return r;
  auto r = error_response(413, why, std::move(request_id));
  r.route = route.index();
  return r;
}

outbound_response request_handler::handle(const inbound_request& request, const request_route& route,
                                          std::size_t thread_index, request_control& control,
                                          boost::asio::yield_context yield) const {
  std::string request_id = make_request_id(request.request_id);
  if (request.method == "OPTIONS") return options(request, route.found, std::move(request_id));
  auto r = route_request(request, route.found, std::move(request_id), thread_index, control, yield);
  if (request.pass != nullptr) r.fields += request.pass->answer_fields;
  if (r.route >= 0) {
    const auto* aggregate = config_.routes[static_cast<std::size_t>(r.route)].aggregate();
    if (aggregate != nullptr && aggregate->cors)
      r.fields += cors_answer_fields(*aggregate->cors, client_field(request, "origin"));
  }
  return r;
}

// A CORS preflight is answered for the route it asks about (a lookup of its own: the method asked about
// is not the request's); any other OPTIONS with the path's methods (`found`, the request's own lookup).
outbound_response request_handler::options(const inbound_request& request, const route_lookup& found,
                                           std::string request_id) const {
  const auto origin = client_field(request, "origin");
  const auto method = client_field(request, "access-control-request-method");
  if (request.target == "*")  // the server as a whole (RFC 9110 9.3.7)
    return no_content("GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS", std::move(request_id));
  if (!origin.empty() && !method.empty()) {
    const auto asked = router_.find(method, request.target);
    if (asked.status == 404) return error_response(404, "no route for this path", std::move(request_id));
    const auto& route = config_.routes[asked.index];
    const auto* aggregate = asked.status == 200 ? route.aggregate() : nullptr;
    if (aggregate == nullptr || !aggregate->cors)
      return error_response(403, "CORS preflight refused: not allowed on this route", std::move(request_id));
    const auto answer = cors_preflight(*aggregate->cors, route.method, origin, method,
                                       client_field(request, "access-control-request-headers"));
    auto r = error_response(answer.status, answer.error, std::move(request_id));
    r.route = static_cast<int>(asked.index);
    if (answer.status == 204) r.body.clear();
    r.fields = answer.fields;
    return r;
  }
  if (found.status == 404) return error_response(404, "no route for this path", std::move(request_id));
  return no_content((found.status == 405 ? found.allow + ", " : std::string()) + "OPTIONS",
                    std::move(request_id));
}

namespace {

// The route's parameters (into `params`) and its body, checked: an error message for the client, or "".
std::string admit_request(const route_pattern& pattern, const aggregate_route& route,
                          const inbound_request& request, const route_lookup& found, param_values& params) {
  if (auto problem =
          extract_params(pattern, route.params, target_query(request.target), found.captures, params);
      !problem.empty()) {
    return problem;
  }
  if (route.takes_body) {  // passed on as JSON: it must be a JSON object (an empty body is none)
    json_object_text checked;
    if (!request.body.empty() && !parse_json_object(std::string(request.body), checked))
      return "request body is not a JSON object";
  }
  return {};
}

// The caller's budget can only shorten ours. A value at or above the route's deadline changes nothing, and
// is never converted (a huge one would overflow the clock's count).
clock::time_point deadline_of(const aggregate_route& route, const inbound_request& request) {
  auto deadline = request.received + route.deadline;
  const auto route_ms = std::chrono::ceil<milliseconds>(route.deadline).count();
  for (auto header : {request.timeout_ms, request.envoy_timeout_ms}) {
    if (auto ms = header_millis(header); ms && *ms < route_ms)
      deadline = std::min(deadline, request.received + milliseconds(*ms));
  }
  return deadline;
}

// The spans of a traced request's calls. Traced and sampled at the head: a span per call, and under it one
// per attempt, whose id its downstream receives. Traced but not sampled (yet): the calls send the server
// span's id, flagged not sampled, and nothing more is recorded unless a call fails (the tail rule keeps the
// request): then a span per call is made from its result, without spans of its attempts. So the requests a
// low sample_ratio leaves out cost a traceparent, not a dozen spans with their attributes.
struct calls_trace {
  std::vector<call_trace> traces;
  traceparent_text unsampled;
  clock::time_point start{};
  std::uint64_t start_ns = 0;

  // Before the fan-out: spans of a sampled request, else the unsampled traceparent the calls send.
  void begin(trace_record& trace, const aggregate_route& route, fanout_request& fr) {
    start = clock::now();
    start_ns = unix_nanos_now();
    if (trace.sampled) {
      open(trace, route);
      fr.call_traces = traces.data();
    } else {
      unsampled = trace.outgoing(trace.server);
      fr.traceparent = unsampled.view();
    }
  }
  // After it: an unsampled request with a failed call is kept (its spans made now); every span ended.
  void end(trace_record& trace, const gateway_config& config, const aggregate_route& route,
           const std::vector<downstream*>& targets, const std::vector<call_result>& results) {
    if (!trace.sampled &&
        std::any_of(results.begin(), results.end(), [](const call_result& r) { return !r.ok(); }))
      open(trace, route);
    if (!traces.empty()) trace_calls(traces, config, route, targets, results);
  }

 private:
  void open(trace_record& trace, const aggregate_route& route) {
    traces.reserve(route.calls.size());
    for (const auto& call : route.calls) traces.emplace_back(trace, call, start, start_ns);
  }
};

// A passed answer is no failure of the gateway's: the access log shows it (the status, its call's).
bool passed(const aggregate_route& route, const std::vector<call_result>& results, std::size_t i) {
  return route.passes_status && passes_to_client(route.calls[i], results[i]);
}

// The answer decided by the first call in the route's order that decides it: one that passed its answer
// (pass_status), or a required call that failed (the fan-out waited for the calls listed before it that
// could decide first, and cancelled the others). Status 0 when the answer is the merge.
outbound_response decided_answer(const aggregate_route& route, std::vector<call_result>& results,
                                 error_detail detail, std::string& request_id) {
  for (std::size_t i = 0; i < route.calls.size(); ++i) {
    if (passed(route, results, i))
      return passed_response(route.calls[i], results[i], detail, std::move(request_id));
    if (!route.calls[i].required || results[i].has_body() || results[i].skipped()) continue;
    // An error answer has no entries: no fallback was served, nothing was degraded. A call not sent for a
    // call it needs answers as that call's failure would (its status), naming it.
    std::size_t cause = i;
    std::string why;
    while (results[cause].outcome == call_outcome::dependency) {
      const auto& after = route.calls[cause].after_index;
      const auto failed =
          std::find_if(after.begin(), after.end(), [&](std::size_t d) { return !results[d].has_body(); });
      if (failed == after.end()) break;  // a value it uses was missing: the call's own failure
      cause = *failed;
      why += "call '" + route.calls[cause].name + "' it needs failed: ";
    }
    const auto status = required_call_status(results[cause].outcome);
    const auto full =
        "required call '" + route.calls[i].name + "' failed: " + why + failure_detail(results[cause]);
    return error_response(status, failure_message(detail, status, full), std::move(request_id));
  }
  return no_answer();
}

}  // namespace

outbound_response request_handler::route_request(const inbound_request& request, const route_lookup& found,
                                                 std::string request_id, std::size_t thread_index,
                                                 request_control& control,
                                                 boost::asio::yield_context yield) const {
  try {
    if (auto r = unrouted(found, request_id); r.status != 0) return r;
    const int route_index = static_cast<int>(found.index);
    const auto& route = config_.routes[found.index];
    // A pass-through request never comes here: the session streams it, or refuses it when cancelled.
    const auto* aggregate = route.aggregate();
    assert(aggregate != nullptr);
    param_values params;
    if (auto problem = admit_request(route.pattern, *aggregate, request, found, params); !problem.empty()) {
      auto r = error_response(400, problem, std::move(request_id));
      r.route = route_index;
      return r;
    }
    std::string_view identity;
    if (request.pass != nullptr) {
      for (const auto& [param, value] : request.pass->params) params[param] = value;
      identity = request.pass->fields;
    }

    fanout_request fr;
    fr.route = aggregate;
    fr.client_body = request.body;
    fr.targets = &targets_[found.index];
    fr.params = &params;
    fr.deadline = deadline_of(*aggregate, request);
    fr.request_id = request_id;
    // A valid W3C traceparent of version 00's length is passed on as it came (when the request is not
    // traced).
    const bool valid = request.traceparent.size() == 55 && parse_traceparent(request.traceparent).has_value();
    fr.traceparent = valid ? request.traceparent : std::string_view();
    call_headers headers;  // outlives the fan-out, whose calls point into it
    if (request.headers != nullptr)
      fr.headers =
          headers.render(*aggregate, config_.server.forwarded, *request.headers, request.origin, identity);
    fr.thread_index = thread_index;
    fr.stack_size = config_.server.stack_bytes();
    fr.metrics = &metrics_.of_thread(thread_index);
    fr.series = &series_;
    calls_trace traced;
    if (request.trace != nullptr) traced.begin(*request.trace, *aggregate, fr);

    // On the heap: its per-call state (some 1.2 KB) would take the coroutine's stack past two pages.
    const auto calls = std::make_unique<fanout>(yield.get_executor());
    control.attach(calls.get());
    if (control.reason() != cancel_reason::none) calls->cancel(control.reason());
    auto results = calls->run(fr, yield);
    control.detach();
    if (request.trace != nullptr)
      traced.end(*request.trace, config_, *aggregate, targets_[found.index], results);
    return answer_of(request, found.index, *aggregate, results, std::move(request_id), thread_index, control);
  } catch (const std::bad_alloc&) {
    // Out of memory or of stack mappings while starting calls (the fan-out has joined those it
    // started): this request is shed, the process lives.
    control.detach();
    spdlog::warn("request {} shed: out of memory while starting its calls", request_id);
    return error_response(503, "overloaded: out of resources", std::move(request_id));
  } catch (const std::exception& e) {
    control.detach();
    spdlog::error("request {} failed: {}", request_id, e.what());
    return error_response(500, "internal error", std::move(request_id));
  }
}

outbound_response request_handler::answer_of(const inbound_request& request, std::size_t index,
                                             const aggregate_route& route, std::vector<call_result>& results,
                                             std::string request_id, std::size_t thread_index,
                                             const request_control& control) const {
  const auto& path = config_.routes[index].path;
  for (std::size_t i = 0; i < route.calls.size(); ++i) {
    if (!results[i].ok() && results[i].outcome != call_outcome::cancelled && !results[i].skipped() &&
        !passed(route, results, i))
      log_failed_call(path, route.calls[i], *targets_[index][i], results[i], request_id);
  }
  std::vector<call_brief> briefs;
  if (request.brief_calls) {
    briefs.reserve(results.size());
    for (std::size_t i = 0; i < route.calls.size(); ++i) briefs.push_back(brief_of(results[i]));
  }
  if (auto r = decided_answer(route, results, config_.server.errors, request_id); r.status != 0) {
    r.route = static_cast<int>(index);
    r.calls = std::move(briefs);
    return r;
  }
  if (control.reason() != cancel_reason::client_gone) {  // nobody will see an abandoned answer
    bool degraded = false;
    for (std::size_t i = 0; i < route.calls.size(); ++i) {
      if (results[i].ok() || results[i].skipped()) continue;
      degraded = true;
      series_.fallback(thread_index, index, i);
    }
    if (degraded) {
      series_.degraded_response(thread_index, index);
      if (recent_ != nullptr) recent_->record(request_id, path, route, results);
    }
  }
  auto merged = merge_results(route, results);
  outbound_response r;
  if (route.passes_response_headers) r.fields = answer_fields(route, results);
  r.route = static_cast<int>(index);
  r.status = 200;
  r.body = std::move(merged.body);
  r.degraded = std::move(merged.degraded);
  r.request_id = std::move(request_id);
  r.calls = std::move(briefs);
  compress_answer(config_.server.compression, request.accept_encoding, r);
  return r;
}

}  // namespace gateway
