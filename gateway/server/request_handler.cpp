#include "gateway/server/request_handler.hpp"

#include "gateway/aggregate/merge.hpp"
#include "gateway/codec/char_class.hpp"
#include "gateway/codec/compression.hpp"
#include "gateway/codec/json_object.hpp"
#include "gateway/codec/json_text.hpp"
#include "gateway/downstream/answer_fields.hpp"
#include "gateway/downstream/call_trace.hpp"
#include "gateway/observe/recent_degraded.hpp"
#include "gateway/server/cors.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <new>
#include <random>
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
void log_failed_call(const route_settings& route, std::size_t index, const downstream& target,
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
  const auto& call = route.calls[index];
  const auto left_out = std::exchange(p.left_out, 0);
  const auto label = outcome_label(result.label_index());
  const auto detail = failure_detail(result);
  spdlog::warn("call '{}' of route {} to downstream '{}' failed: {}{}{}{}, request {}{}", call.name,
               route.path, call.downstream, label, detail != label ? " (" : "", detail != label ? detail : "",
               detail != label ? ")" : "", request_id,
               left_out != 0 ? "; " + std::to_string(left_out) +
                                   " more failed calls to it not logged in the last second"
                             : std::string());
}

// Ends the span of each call (call_trace, made before the fan-out in call order).
void trace_calls(std::vector<call_trace>& traces, const gateway_config& config, const route_settings& route,
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

namespace {

// A seed from std::random_device, which lives on the stack (about 5 KB) while it is used: out of line, so
// that callers running on small coroutine stacks do not reserve that space.
[[gnu::noinline, gnu::cold]] std::uint64_t random_seed() {
  return std::random_device{}();
}

}  // namespace

std::string make_request_id(std::string_view incoming) {
  if (safe_token(incoming, 128)) return std::string(incoming);
  thread_local std::mt19937_64 rng{random_seed()};
  const std::uint64_t a = rng();
  const std::uint64_t b = rng();
  return fmt::format("{:016x}{:016x}", a, b);
}

request_handler::request_handler(const gateway_config& config, std::vector<std::vector<downstream*>> targets,
                                 metrics_registry& metrics, const metric_set& series, recent_degraded* recent)
    : config_(config),
      router_(config.routes),
      targets_(std::move(targets)),
      metrics_(metrics),
      series_(series),
      has_proxy_routes_(std::any_of(config.routes.begin(), config.routes.end(),
                                    [](const route_settings& r) { return r.proxy.has_value(); })),
      recent_(recent) {}

bool request_handler::takes_body(std::string_view method, std::string_view target) const {
  const auto found = router_.find(method, target);
  return found.status == 200 && config_.routes[found.index].takes_body;
}

outbound_response request_handler::refuse_body(std::string_view method, std::string_view target,
                                               std::string_view incoming_id, std::string_view why) const {
  const auto found = router_.find(method, target);
  if (found.status == 404) return error_response(404, "no route for this path", make_request_id(incoming_id));
  if (found.status == 405) {
    auto r = error_response(405, "method not allowed", make_request_id(incoming_id));
    r.route = static_cast<int>(found.index);
    r.allow = found.allow;
    return r;
  }
  auto r = error_response(413, why, make_request_id(incoming_id));
  r.route = static_cast<int>(found.index);
  return r;
}

int request_handler::route_index(std::string_view method, std::string_view target) const {
  const auto found = router_.find(method, target);
  return found.status == 200 ? static_cast<int>(found.index) : -1;
}

int request_handler::proxy_route(std::string_view method, std::string_view target) const {
  const auto found = router_.find(method, target);
  return found.status == 200 && config_.routes[found.index].proxy ? static_cast<int>(found.index) : -1;
}

namespace {

std::string client_field(const inbound_request& request, std::string_view name) {
  std::string value;
  if (request.headers != nullptr) request.headers->append(name, value, ", ");
  return value;
}

}  // namespace

outbound_response request_handler::handle(const inbound_request& request, std::size_t worker,
                                          request_control& control, boost::asio::yield_context yield) const {
  std::string request_id = make_request_id(request.request_id);
  if (request.method == "OPTIONS") return options(request, std::move(request_id));
  auto r = route_request(request, std::move(request_id), worker, control, yield);
  if (r.route >= 0) {
    if (const auto& cors = config_.routes[static_cast<std::size_t>(r.route)].cors)
      r.fields += cors_answer_fields(*cors, client_field(request, "origin"));
  }
  return r;
}

// A CORS preflight is answered for the route it asks about; any other OPTIONS with the path's methods.
outbound_response request_handler::options(const inbound_request& request, std::string request_id) const {
  const auto origin = client_field(request, "origin");
  const auto method = client_field(request, "access-control-request-method");
  if (request.target == "*")  // the server as a whole (RFC 9110 9.3.7)
    return no_content("GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS", std::move(request_id));
  if (!origin.empty() && !method.empty()) {
    const auto found = router_.find(method, request.target);
    if (found.status == 404) return error_response(404, "no route for this path", std::move(request_id));
    const auto& cors = found.status == 200 ? config_.routes[found.index].cors : std::nullopt;
    if (!cors)
      return error_response(403, "CORS preflight refused: not allowed on this route", std::move(request_id));
    const auto& route = config_.routes[found.index];
    const auto answer = cors_preflight(*cors, route.method, origin, method,
                                       client_field(request, "access-control-request-headers"));
    auto r = error_response(answer.status, answer.error, std::move(request_id));
    r.route = static_cast<int>(found.index);
    if (answer.status == 204) r.body.clear();
    r.fields = answer.fields;
    return r;
  }
  const auto found = router_.find("OPTIONS", request.target);
  if (found.status == 404) return error_response(404, "no route for this path", std::move(request_id));
  return no_content((found.status == 405 ? found.allow + ", " : std::string()) + "OPTIONS",
                    std::move(request_id));
}

outbound_response request_handler::route_request(const inbound_request& request, std::string request_id,
                                                 std::size_t worker, request_control& control,
                                                 boost::asio::yield_context yield) const {
  try {
    const auto found = router_.find(request.method, request.target);
    if (found.status == 404) return error_response(404, "no route for this path", std::move(request_id));
    if (found.status == 405) {  // logged and counted under the route whose path matched
      auto r = error_response(405, "method not allowed", std::move(request_id));
      r.route = static_cast<int>(found.index);
      r.allow = found.allow;
      return r;
    }
    const auto& route = config_.routes[found.index];
    const int route_index = static_cast<int>(found.index);
    std::vector<std::string> params;
    if (auto problem = extract_params(route, target_query(request.target), found.captures, params);
        !problem.empty()) {
      auto r = error_response(400, problem, std::move(request_id));
      r.route = route_index;
      return r;
    }

    if (route.takes_body) {  // passed on as JSON: it must be a JSON object (an empty body is none)
      json_object_text checked;
      if (!request.body.empty() && !parse_json_object(std::string(request.body), checked)) {
        auto r = error_response(400, "request body is not a JSON object", std::move(request_id));
        r.route = route_index;
        return r;
      }
    }

    // The caller's budget can only shorten ours. A value at or above the route's deadline changes
    // nothing, and is never converted (a huge one would overflow the clock's count).
    auto deadline = request.received + route.deadline;
    const auto route_ms = std::chrono::ceil<milliseconds>(route.deadline).count();
    for (auto header : {request.timeout_ms, request.envoy_timeout_ms}) {
      if (auto ms = header_millis(header); ms && *ms < route_ms)
        deadline = std::min(deadline, request.received + milliseconds(*ms));
    }

    fanout_request fr;
    fr.route = &route;
    fr.client_body = request.body;
    fr.targets = &targets_[found.index];
    fr.params = &params;
    fr.deadline = deadline;
    fr.request_id = request_id;
    // A valid W3C traceparent of version 00's length is passed on as it came (when the request is not
    // traced).
    const bool valid = request.traceparent.size() == 55 && parse_traceparent(request.traceparent).has_value();
    fr.traceparent = valid ? request.traceparent : std::string_view();
    call_headers headers;  // outlives the fan-out, whose calls point into it
    if (request.headers != nullptr)
      fr.headers = headers.render(route, config_.server.forwarded, *request.headers, request.origin);
    fr.worker = worker;
    fr.stack_size = config_.server.stack_bytes();
    fr.metrics = &metrics_.worker(worker);
    fr.series = &series_;

    // Traced and sampled at the head: a span per call, and under it one per attempt, whose id its
    // downstream receives. Traced but not sampled (yet): the calls send the server span's id, flagged not
    // sampled, and nothing more is recorded unless a call fails (the tail rule keeps the request): then a
    // span per call is made from its result, without spans of its attempts. So the requests a low
    // sample_ratio leaves out cost a traceparent, not a dozen spans with their attributes.
    std::vector<call_trace> traces;
    traceparent_text unsampled;
    clock::time_point fanout_start{};
    std::uint64_t fanout_start_ns = 0;
    if (request.trace != nullptr) {
      fanout_start = clock::now();
      fanout_start_ns = unix_nanos_now();
      if (request.trace->sampled) {
        traces.reserve(route.calls.size());
        for (const auto& call : route.calls)
          traces.emplace_back(*request.trace, call, fanout_start, fanout_start_ns);
        fr.call_traces = traces.data();
      } else {
        unsampled = request.trace->outgoing(request.trace->server);
        fr.traceparent = unsampled.view();
      }
    }

    fanout calls(yield.get_executor());
    control.attach(&calls);
    if (control.reason() != cancel_reason::none) calls.cancel(control.reason());
    auto results = calls.run(fr, yield);
    control.detach();
    if (request.trace != nullptr && !request.trace->sampled &&
        std::any_of(results.begin(), results.end(), [](const call_result& r) { return !r.ok(); })) {
      traces.reserve(route.calls.size());
      for (const auto& call : route.calls)
        traces.emplace_back(*request.trace, call, fanout_start, fanout_start_ns);
    }
    if (!traces.empty()) trace_calls(traces, config_, route, targets_[found.index], results);
    // A passed answer is no failure of the gateway's: the access log shows it (the status, its call's).
    const auto passed = [&](std::size_t i) {
      return route.passes_status && passes_to_client(route.calls[i], results[i]);
    };
    for (std::size_t i = 0; i < route.calls.size(); ++i) {
      if (!results[i].ok() && results[i].outcome != call_outcome::cancelled && !passed(i))
        log_failed_call(route, i, *targets_[found.index][i], results[i], request_id);
    }

    std::vector<call_brief> briefs;
    if (request.brief_calls) {
      briefs.reserve(results.size());
      for (const auto& result : results) briefs.push_back(brief_of(result));
    }

    // The first call in the route's order that decides the answer: one that passed its answer (pass_status),
    // or a required call that failed (the fan-out waited for the calls listed before it that could decide
    // first, and cancelled the others).
    for (std::size_t i = 0; i < route.calls.size(); ++i) {
      if (passed(i)) {
        auto r = passed_response(route.calls[i], results[i], config_.server.errors, std::move(request_id));
        r.route = route_index;
        r.calls = std::move(briefs);
        return r;
      }
      if (!route.calls[i].required || results[i].has_body()) continue;
      // An error answer has no entries: no fallback was served, nothing was degraded.
      const auto status = required_call_status(results[i].outcome);
      const auto full = "required call '" + route.calls[i].name + "' failed: " + failure_detail(results[i]);
      auto r =
          error_response(status, failure_message(config_.server.errors, status, full), std::move(request_id));
      r.route = route_index;
      r.calls = std::move(briefs);
      return r;
    }
    if (control.reason() != cancel_reason::client_gone) {  // nobody will see an abandoned answer
      bool degraded = false;
      for (std::size_t i = 0; i < route.calls.size(); ++i) {
        if (results[i].ok()) continue;
        degraded = true;
        series_.fallback(worker, found.index, i);
      }
      if (degraded) {
        series_.degraded_response(worker, found.index);
        if (recent_ != nullptr) recent_->record(request_id, route, results);
      }
    }
    auto merged = merge_results(route, results);
    outbound_response r;
    if (route.passes_response_headers) r.fields = answer_fields(route, results);
    r.route = route_index;
    r.status = 200;
    r.body = std::move(merged.body);
    r.degraded = std::move(merged.degraded);
    r.request_id = std::move(request_id);
    r.calls = std::move(briefs);
    compress_answer(config_.server.compression, request.accept_encoding, r);
    return r;
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

}  // namespace gateway
