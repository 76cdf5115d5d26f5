// What counts against a downstream (failure_rule): the default list, a list of the operator's, statuses
// named one by one, and the verdict a breaker records for a result.

#include "gateway/downstream/failure_rule.hpp"

#include <catch2/catch.hpp>

using namespace gateway;

namespace {

call_result ended(call_outcome outcome, call_error error = call_error::none, unsigned status = 0,
                  bool contacted = true) {
  call_result r;
  r.outcome = outcome;
  r.error = error;
  r.status = status;
  r.contacted = contacted;
  return r;
}

}  // namespace

TEST_CASE(
    "failure rule: by default connect failures, resets, timeouts, invalid answers and 5xx count, never a "
    "4xx") {
  const failure_rule rule;
  CHECK(counts_as_failure(rule, ended(call_outcome::error, call_error::refused)));
  CHECK(counts_as_failure(rule, ended(call_outcome::error, call_error::tls)));
  CHECK(counts_as_failure(rule, ended(call_outcome::timeout, call_error::connect_timeout)));
  CHECK(counts_as_failure(rule, ended(call_outcome::error, call_error::reset)));
  CHECK(counts_as_failure(rule, ended(call_outcome::error, call_error::other)));
  CHECK(counts_as_failure(rule, ended(call_outcome::timeout)));
  CHECK(counts_as_failure(rule, ended(call_outcome::error, call_error::invalid_body, 200)));
  CHECK(counts_as_failure(rule, ended(call_outcome::error, call_error::too_large, 200)));
  CHECK(counts_as_failure(rule, ended(call_outcome::error, call_error::status_5xx, 503)));
  CHECK(
      counts_as_failure(rule, ended(call_outcome::error, call_error::status_5xx, 302)));  // no usable answer
  CHECK_FALSE(counts_as_failure(rule, ended(call_outcome::error, call_error::status_4xx, 401)));
  CHECK_FALSE(counts_as_failure(rule, ended(call_outcome::error, call_error::status_4xx, 429)));
  for (auto outcome : {call_outcome::ok, call_outcome::cancelled, call_outcome::rejected,
                       call_outcome::circuit_open, call_outcome::stale}) {
    CHECK_FALSE(counts_as_failure(rule, ended(outcome)));
  }
}

TEST_CASE("failure rule: a call that never reached the downstream is never its failure") {
  failure_rule everything;
  everything.kinds = 0xff;
  CHECK_FALSE(counts_as_failure(everything, ended(call_outcome::timeout, call_error::none, 0, false)));
  CHECK_FALSE(counts_as_failure(everything, ended(call_outcome::error, call_error::refused, 0, false)));
  CHECK(breaker_verdict(everything, ended(call_outcome::timeout, call_error::none, 0, false)) ==
        call_outcome::cancelled);
}

TEST_CASE("failure rule: an operator's list counts what it names and nothing else") {
  failure_rule rule;
  rule.kinds = failure_rule::connect | failure_rule::status_5xx;
  rule.statuses = {429};
  CHECK(counts_as_failure(rule, ended(call_outcome::timeout, call_error::connect_timeout)));
  CHECK_FALSE(counts_as_failure(rule, ended(call_outcome::timeout)));  // a slow answer, not a connect
  CHECK_FALSE(counts_as_failure(rule, ended(call_outcome::error, call_error::reset)));
  CHECK_FALSE(counts_as_failure(rule, ended(call_outcome::error, call_error::invalid_body, 200)));
  CHECK(counts_as_failure(rule, ended(call_outcome::error, call_error::status_4xx, 429)));
  CHECK_FALSE(counts_as_failure(rule, ended(call_outcome::error, call_error::status_4xx, 404)));
  CHECK(counts_as_failure(rule, ended(call_outcome::error, call_error::status_5xx, 500)));

  failure_rule client_errors;
  client_errors.kinds = failure_rule::status_4xx;
  CHECK(counts_as_failure(client_errors, ended(call_outcome::error, call_error::status_4xx, 404)));
  CHECK_FALSE(counts_as_failure(client_errors, ended(call_outcome::error, call_error::status_5xx, 500)));
}

TEST_CASE("failure rule: the verdict a breaker records") {
  const failure_rule rule;
  CHECK(breaker_verdict(rule, ended(call_outcome::ok, call_error::none, 200)) == call_outcome::ok);
  CHECK(breaker_verdict(rule, ended(call_outcome::timeout)) == call_outcome::error);
  CHECK(breaker_verdict(rule, ended(call_outcome::error, call_error::status_4xx, 401)) ==
        call_outcome::cancelled);
  CHECK(breaker_verdict(rule, ended(call_outcome::cancelled)) == call_outcome::cancelled);
  CHECK(breaker_verdict(rule, ended(call_outcome::rejected, call_error::none, 0, false)) ==
        call_outcome::cancelled);
}
