#pragma once
// What counts against a downstream: one rule (config's failure_rule, the circuit_breaker's `failures`)
// for the downstream's circuit breaker, its endpoints' breakers and outlier ejection, applied to how a
// call, an attempt or a pass-through exchange ended. A call that never reached the downstream (it ran out
// of time waiting for a pooled connection, a connect slot or a database permit) is never its failure.

#include "gateway/config/config.hpp"
#include "gateway/downstream/call_result.hpp"

namespace gateway {

// A failure by `rule`: `error` is the kind of an `error` outcome (call_error::connect_timeout for a
// timeout while connecting), `status` the answer's status (0: none).
bool counts_as_failure(const failure_rule& rule, call_outcome outcome, call_error error, unsigned status);

// An answer with `status` that a pass-through route relays: a failure when `rule` counts that status.
inline bool counts_answer_status(const failure_rule& rule, unsigned status) {
  return status >= 400 &&
         counts_as_failure(rule, call_outcome::error,
                           status >= 500 ? call_error::status_5xx : call_error::status_4xx, status);
}

inline bool counts_as_failure(const failure_rule& rule, const call_result& r) {
  return r.contacted && counts_as_failure(rule, r.outcome, r.error, r.status);
}

// What a breaker records for `r`: error (a failure by `rule`), ok, or cancelled (counts neither way: a 4xx
// left out of the rule, a cancelled call, a call that never reached the downstream).
inline call_outcome breaker_verdict(const failure_rule& rule, const call_result& r) {
  if (r.ok()) return r.contacted ? call_outcome::ok : call_outcome::cancelled;
  return counts_as_failure(rule, r) ? call_outcome::error : call_outcome::cancelled;
}

}  // namespace gateway
