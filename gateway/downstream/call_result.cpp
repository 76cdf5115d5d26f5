#include "gateway/downstream/call_result.hpp"

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
  }
  return "error";
}

}  // namespace gateway
