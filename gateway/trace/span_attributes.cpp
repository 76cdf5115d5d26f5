#include "gateway/trace/span_attributes.hpp"

#include "gateway/trace/redaction.hpp"

namespace gateway::span_attributes {

std::string full_url(std::string_view origin, std::string_view target) {
  std::string url(origin);
  append_redacted_target(url, target);
  return url;
}

}  // namespace gateway::span_attributes
