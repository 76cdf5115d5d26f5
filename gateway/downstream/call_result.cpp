#include "gateway/downstream/call_result.hpp"

#include <array>
#include <string>

namespace gateway {

std::string_view to_string(call_outcome outcome) {
  switch (outcome) {
    case call_outcome::ok:
      return "ok";
    case call_outcome::timeout:
      return "timeout";
    case call_outcome::error:
      return "error";
    case call_outcome::cancelled:
      return "cancelled";
    case call_outcome::rejected:
      return "rejected";
    case call_outcome::circuit_open:
      return "circuit_open";
    case call_outcome::stale:
      return "stale";
    case call_outcome::dependency:
      return "dependency";
    case call_outcome::skipped:
      return "skipped";
  }
  return "error";
}

namespace {

// Outcomes first (in their order, "error" standing for call_error::other), then the error kinds.
constexpr std::array<std::string_view, outcome_label_count> labels{
    "ok",      "timeout",    "error",      "cancelled",    "rejected",  "circuit_open", "stale", "dependency",
    "skipped", "status_4xx", "status_5xx", "invalid_body", "too_large", "refused",      "reset", "tls"};

}  // namespace

std::size_t outcome_label_index(call_outcome outcome, call_error error) {
  if (outcome != call_outcome::error || error == call_error::none || error == call_error::other)
    return static_cast<std::size_t>(outcome);
  return call_outcome_count + static_cast<std::size_t>(error) -
         static_cast<std::size_t>(call_error::status_4xx);
}

std::string_view outcome_label(std::size_t index) {
  return index < labels.size() ? labels[index] : "error";
}

std::string failure_detail(const call_result& r) {
  const bool by_status = r.error == call_error::status_4xx || r.error == call_error::status_5xx;
  if (by_status && r.status != 0) return "status " + std::to_string(r.status);
  if (*r.detail != '\0') return r.detail;
  return std::string(outcome_label(r.label_index()));
}

}  // namespace gateway
