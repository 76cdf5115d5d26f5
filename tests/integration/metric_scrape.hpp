#pragma once
// One metric as the gateway's admin listener shows it now: the sum of the samples named `name` whose
// labels include `labels`; the page must be valid exposition text.

#include "tests/support/http_client.hpp"
#include "tests/support/processes.hpp"
#include "tests/support/prometheus_text.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>

namespace test_support {

inline double metric(const gateway_process& gw, const std::string& name, const label_map& labels = {}) {
  const auto page = parse_exposition(http_get(gw.admin_port(), "/metrics").body);
  INFO(text_of(page.problems));
  CHECK(page.problems.empty());
  return total(page, name, labels);
}

// The metric once it equals `expected`, or its last value after `timeout`: for a count the gateway makes
// after something the test sees first (a request's series is counted when its exchange has ended, which
// is after the downstream saw it cancelled).
inline double settled_metric(const gateway_process& gw, const std::string& name, const label_map& labels,
                             double expected,
                             std::chrono::milliseconds timeout = std::chrono::milliseconds(3000)) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto value = metric(gw, name, labels);
    if (value == expected || std::chrono::steady_clock::now() >= give_up) return value;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace test_support
