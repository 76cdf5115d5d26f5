#pragma once
// Turns the call results of one request into the response body. Pure: no I/O, no clock.
// Each entry is the downstream's object (filtered by the call's `fields`) or, for a failed call, its
// fallback; plus "source" (the call name) and "degraded", and for a degraded entry, when the route names
// a `degraded_reason_field`, that field with the outcome ("timeout"). Array: entries in call order;
// object: keyed by call name. Call names are written without escaping: the configuration allows only
// A-Z a-z 0-9 - _ .

#include "gateway/config/config.hpp"
#include "gateway/downstream/call_result.hpp"

#include <string>
#include <vector>

namespace gateway {

struct merged_response {
  std::string body;
  // The degraded calls in call order, each with why (call_outcome), as X-Degraded writes them:
  // "coupon;reason=timeout, pricing;reason=circuit_open"; empty if none.
  std::string degraded;
};

// A route with aggregate_route::shaped goes to merge_shaped (shaped_merge.cpp), every other one takes the
// fast path here.
merged_response merge_results(const aggregate_route& route, const std::vector<call_result>& results);
merged_response merge_shaped(const aggregate_route& route, const std::vector<call_result>& results);

}  // namespace gateway
