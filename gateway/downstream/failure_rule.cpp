#include "gateway/downstream/failure_rule.hpp"

#include <algorithm>

namespace gateway {

bool counts_as_failure(const failure_rule& rule, call_outcome outcome, call_error error, unsigned status) {
  const auto has = [&](failure_rule::kind k) { return (rule.kinds & k) != 0; };
  if (outcome == call_outcome::timeout)
    return has(error == call_error::connect_timeout ? failure_rule::connect : failure_rule::timeout);
  if (outcome != call_outcome::error) return false;  // ok, cancelled, refused locally, stale
  if (status != 0 && !rule.statuses.empty() &&
      std::find(rule.statuses.begin(), rule.statuses.end(), status) != rule.statuses.end())
    return true;
  switch (error) {
    case call_error::status_4xx:
      return has(failure_rule::status_4xx);
    case call_error::status_5xx:  // and any other status that is not 2xx: a 1xx or 3xx is no usable answer
      return has(status >= 500 ? failure_rule::status_5xx : failure_rule::invalid_answer);
    case call_error::invalid_body:
    case call_error::too_large:
      return has(failure_rule::invalid_answer);
    case call_error::refused:
    case call_error::tls:
    case call_error::connect_timeout:
      return has(failure_rule::connect);
    case call_error::none:
    case call_error::reset:
    case call_error::other:
      return has(failure_rule::reset);
  }
  return has(failure_rule::reset);
}

}  // namespace gateway
