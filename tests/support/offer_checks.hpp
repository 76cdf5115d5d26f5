#pragma once
// Assertions shared by the integration tests about the seed route's answer (Catch2 CHECK/REQUIRE).

#include "tests/support/http_client.hpp"
#include "tests/support/processes.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <string>
#include <vector>

namespace test_support {

using steady_clock = std::chrono::steady_clock;

inline milliseconds elapsed_since(steady_clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(steady_clock::now() - start);
}

inline std::string offer_target(const std::string& sku) {
  return "/api/offer/aggregate?sku=" + sku;
}

// A distinct sku per request, e.g. numbered_sku("L", 3) == "L3".
inline std::string numbered_sku(std::string prefix, long long n) {
  prefix += std::to_string(n);
  return prefix;
}

// An entry built from the mock's answer: {"source", "sku", "priceCent", "stock"} plus "degraded": false.
inline void check_healthy_entry(const nlohmann::json& entry, const std::string& call,
                                const std::string& sku) {
  INFO("entry " << call << ": " << entry.dump());
  REQUIRE(entry.is_object());
  CHECK(entry.value("source", "") == call);
  CHECK(entry.value("degraded", true) == false);
  CHECK(entry.value("sku", "") == sku);
  CHECK(entry.contains("priceCent"));
  CHECK(entry.contains("stock"));
  if (entry.contains("priceCent")) CHECK(entry["priceCent"].is_number_integer());
  if (entry.contains("stock")) CHECK(entry["stock"].is_number_integer());
}

// The configured fallback plus "source" and "degraded": true, nothing else.
inline void check_fallback_entry(const nlohmann::json& entry, const std::string& call) {
  INFO("entry " << call << ": " << entry.dump());
  CHECK(entry ==
        nlohmann::json{
            {"priceCent", fallback_price}, {"stock", fallback_stock}, {"source", call}, {"degraded", true}});
}

// mock-downstream arguments that make every seed path hang (accept, read, never answer); `delay` is the
// default delay of any other path.
inline std::vector<std::string> all_hang_args(const std::string& delay) {
  std::vector<std::string> args = {"--delay", delay};
  for (const auto& call : seed_calls) args.insert(args.end(), {"--path", call + "=hang"});
  return args;
}

inline std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

// A 200 array answer of the seed route in call order, with exactly `degraded` (in call order) replaced by
// their fallback and listed in X-Degraded.
inline void check_offer(const http_response& res, const std::string& sku,
                        const std::vector<std::string>& degraded = {}) {
  INFO("status " << res.status << ", body " << res.body.substr(0, 2000));
  REQUIRE(res.status == 200);
  CHECK(res.header("content-type").value_or("").find("application/json") != std::string::npos);
  CHECK_FALSE(res.header("x-request-id").value_or("").empty());
  if (degraded.empty()) {
    CHECK_FALSE(res.has_header("x-degraded"));
  } else {
    CHECK(res.degraded_calls().value_or("<absent>") == join(degraded));
  }
  auto body = res.json();
  REQUIRE(body.is_array());
  REQUIRE(body.size() == seed_calls.size());
  for (std::size_t i = 0; i < seed_calls.size(); ++i) {
    const auto& call = seed_calls[i];
    if (std::find(degraded.begin(), degraded.end(), call) != degraded.end()) {
      check_fallback_entry(body[i], call);
    } else {
      check_healthy_entry(body[i], call, sku);
    }
  }
}

// A JSON error answer: {"error": "<non-empty>"}.
inline void check_error(const http_response& res, int status) {
  INFO("status " << res.status << ", body " << res.body.substr(0, 2000));
  CHECK(res.status == status);
  CHECK(res.header("content-type").value_or("").find("application/json") != std::string::npos);
  auto body = res.json();
  REQUIRE(body.is_object());
  REQUIRE(body.contains("error"));
  CHECK(body["error"].is_string());
  CHECK_FALSE(body["error"].get<std::string>().empty());
}

// Stops the gateway with SIGTERM and checks that it exits 0 promptly (no crash while shutting down).
inline void check_clean_exit(gateway_process& gw, milliseconds timeout = std::chrono::seconds(5)) {
  REQUIRE(gw.running());
  auto status = gw.process().stop(SIGTERM, timeout);
  INFO("gateway stderr (tail):\n"
       << [&] {
            auto err = gw.process().stderr_text();
            return err.size() > 3000 ? err.substr(err.size() - 3000) : err;
          }());
  REQUIRE(status.has_value());
  CHECK(status->exited);
  CHECK(status->code == 0);
}

// Sum of one per-path counter over the seed route's six paths.
inline long long sum_over_calls(mock_downstream& mock, const nlohmann::json& stats,
                                const std::string& counter) {
  long long total = 0;
  for (const auto& call : seed_calls) total += mock.path_counter(stats, call, counter);
  return total;
}

}  // namespace test_support
