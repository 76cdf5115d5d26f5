#pragma once
// One metric as the gateway's admin listener shows it now: the sum of the samples named `name` whose
// labels include `labels`; the page must be valid exposition text.

#include "tests/support/http_client.hpp"
#include "tests/support/processes.hpp"
#include "tests/support/prometheus_text.hpp"

#include <catch2/catch.hpp>

#include <string>

namespace test_support {

inline double metric(const gateway_process& gw, const std::string& name, const label_map& labels = {}) {
  const auto page = parse_exposition(http_get(gw.admin_port(), "/metrics").body);
  INFO(text_of(page.problems));
  CHECK(page.problems.empty());
  return total(page, name, labels);
}

}  // namespace test_support
