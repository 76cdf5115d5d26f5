#pragma once
// The interface every kind of downstream implements (HTTP, SQL). A call runs one of two ways, on the
// request's I/O thread, and never throws for I/O:
// - start(): without a stack of its own (HTTP). It reports through `sink` exactly once, possibly before
//   start() returns; everything it needs from `request` it copies during start().
// - call(): inside a stackful coroutine of its own (SQL), for downstreams whose start() returns false.
// The caller fires `cancel` at the call's deadline (or when the request is abandoned) and the call must
// then finish promptly, releasing nothing half-used to a pool. `deadline` is for propagation (e.g.
// X-Request-Timeout-Ms) and for the call's own waits.

#include "gateway/config/config.hpp"
#include "gateway/downstream/answer_cache.hpp"
#include "gateway/downstream/call_result.hpp"
#include "gateway/downstream/circuit_breaker.hpp"
#include "gateway/downstream/proxy_link.hpp"
#include "gateway/runtime/cancel_source.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/spawn.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gateway {

class call_trace;

struct call_request {
  std::string_view method = "GET";       // HTTP
  std::string_view target;               // expanded path + query (HTTP)
  std::string_view body;                 // HTTP: sent as application/json (POST, PUT, ...)
  bool idempotent = true;                // HTTP: may be retried and hedged
  const param_values* params = nullptr;  // route parameter values, aligned with param_specs
  const std::vector<param_settings>* param_specs = nullptr;  // the route's parameters
  clock::time_point deadline;                                // effective deadline of this call
  clock::time_point now;                                     // when the fan-out started it
  std::string_view request_id;
  std::string_view traceparent;  // empty when absent
  // The call's spans when its request is traced (call_trace.hpp: HTTP attempts, a SQL call's wait); null
  // when it is not. Lives in the fan-out, which waits for the call.
  call_trace* trace = nullptr;
  // HTTP: more header fields, each "\r\nName: value" (the header policy's, then the forwarded ones).
  std::string_view headers;
  // SQL: the query the call runs (its statement and the names it binds; the downstream's settings); null
  // for HTTP.
  const sql_settings* sql = nullptr;
  // The answer's fields to keep for the client (the call's effective response_headers, in the
  // configuration); null when it asks for none, the default, which costs nothing per field.
  const response_header_policy* answer_fields = nullptr;
  // HTTP: the statuses whose answers the call passes to the client (the call's pass_status), with the
  // fields to keep from them; null when it passes none, the default, which costs nothing per answer.
  const passed_answer_policy* pass = nullptr;
  std::size_t thread_index = 0;  // index of the I/O thread the coroutine runs on
  cancel_source* cancel = nullptr;
};

// The value a SQL call binds to its query's `name`: the last of the route's parameters of that name with
// a value; nullopt (NULL) when none has one. The call binds it, and share_key() keys its answer by it.
inline std::optional<std::string_view> bound_value(const call_request& request, std::string_view name) {
  std::optional<std::string_view> value;
  if (request.param_specs == nullptr || request.params == nullptr) return value;
  const auto& specs = *request.param_specs;
  for (std::size_t i = 0; i < specs.size() && i < request.params->size(); ++i) {
    if (specs[i].name == name && !(*request.params)[i].empty()) value = (*request.params)[i];
  }
  return value;
}

// Receives the result of a call started with downstream::start().
class call_sink {
 public:
  virtual void call_finished(std::size_t index, call_result&& result) = 0;

 protected:
  ~call_sink() = default;
};

class downstream {
 public:
  virtual ~downstream() = default;
  // Starts the call and returns true, or returns false when this downstream needs call().
  virtual bool start(const call_request& /*request*/, call_sink& /*sink*/, std::size_t /*index*/) {
    return false;
  }
  // Runs the call in the caller's coroutine; only asked of downstreams whose start() returns false.
  virtual call_result call(const call_request& /*request*/, boost::asio::yield_context /*yield*/) {
    call_result result;
    result.detail = "internal error";
    return result;
  }
  // Pass-through (proxy routes): a connection for one exchange on the caller's I/O thread, from the
  // downstream's pool there, within `request.ready_by`; null with `why` when none could be had. Runs in
  // the caller's coroutine. Only HTTP downstreams have one.
  virtual std::unique_ptr<proxy_link> lease(const lease_request& /*request*/,
                                            boost::asio::yield_context /*yield*/, lease_failure& why) {
    why = {lease_failure::kind::failed, "not an HTTP downstream"};
    return nullptr;
  }
  // Closes idle connections owned by I/O thread `thread_index` (called on that thread during shutdown).
  virtual void close_idle(std::size_t thread_index) = 0;
  // False while the downstream cannot serve at all (e.g. a database pool with no open connection).
  virtual bool ready() const { return true; }

  // The downstream's circuit breaker, asked by the fan-out around every call; null when it has none.
  circuit_breaker* breaker() const { return breaker_.get(); }
  void set_breaker(std::unique_ptr<circuit_breaker> breaker) { breaker_ = std::move(breaker); }
  // Its answer cache (answer_cache.hpp): the last good answers, served when a call fails (stale_if_error)
  // and, while the downstream's Cache-Control allows, instead of a call (cache). Kept and served by the
  // fan-out; null when neither is configured.
  answer_cache* stale() const { return stale_.get(); }
  void set_stale(std::unique_ptr<answer_cache> cache) { stale_ = std::move(cache); }
  // A SQL downstream's query (call_request::sql); null for HTTP.
  const sql_settings* query() const { return query_; }

 protected:
  const sql_settings* query_ = nullptr;  // set by a SQL downstream: its own settings'

 private:
  std::unique_ptr<circuit_breaker> breaker_;
  std::unique_ptr<answer_cache> stale_;
};

}  // namespace gateway
