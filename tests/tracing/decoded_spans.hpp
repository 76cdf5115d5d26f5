#pragma once
// The spans an otlp_receiver decoded, as the gateway's trace tests read them: grouped by trace, their
// attributes by key, their parent and child links. The receiver's JSON is protobufjs's toObject (ids in
// lowercase hex, int64 values as decimal strings, enums as numbers).

#include "tests/tracing/collectors.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace test_support {

// OTLP's SpanKind values.
inline constexpr int internal_span = 1;
inline constexpr int server_span = 2;
inline constexpr int client_span = 3;

// Every span the receiver decoded so far, by trace id.
inline std::map<std::string, std::vector<nlohmann::json>> spans_by_trace(const otlp_receiver& receiver) {
  std::map<std::string, std::vector<nlohmann::json>> out;
  for (const auto& r : receiver.requests()) {
    if (!r.contains("request")) continue;
    for (const auto& rs : r.at("request").value("resourceSpans", nlohmann::json::array()))
      for (const auto& ss : rs.value("scopeSpans", nlohmann::json::array()))
        for (const auto& s : ss.value("spans", nlohmann::json::array())) out[s.at("traceId")].push_back(s);
  }
  return out;
}

// The spans of `trace` once there are at least `count` (polled for up to 5 s; fewer when they never came).
inline std::vector<nlohmann::json> wait_for_spans(const otlp_receiver& receiver, const std::string& trace,
                                                  std::size_t count) {
  std::vector<nlohmann::json> spans;
  for (int i = 0; i < 100; ++i) {
    spans = spans_by_trace(receiver)[trace];
    if (spans.size() >= count) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return spans;
}

// A span's attributes by key: each value as its oneof holds it ("intValue": a decimal string).
inline std::map<std::string, nlohmann::json> attributes_of(const nlohmann::json& span) {
  std::map<std::string, nlohmann::json> out;
  for (const auto& kv : span.value("attributes", nlohmann::json::array())) {
    const auto& v = kv.at("value");
    out[kv.at("key")] = v.at(v.at("value").get<std::string>());
  }
  return out;
}

// The spans of `kind` among `spans`.
inline std::vector<const nlohmann::json*> of_kind(const std::vector<nlohmann::json>& spans, int kind) {
  std::vector<const nlohmann::json*> out;
  for (const auto& s : spans) {
    if (s.at("kind") == kind) out.push_back(&s);
  }
  return out;
}

inline unsigned long long start_of(const nlohmann::json& span) {
  return std::stoull(span.at("startTimeUnixNano").get<std::string>());
}
inline unsigned long long end_of(const nlohmann::json& span) {
  return std::stoull(span.at("endTimeUnixNano").get<std::string>());
}

// The spans whose parent is `parent`, in start order.
inline std::vector<const nlohmann::json*> children_of(const std::vector<nlohmann::json>& spans,
                                                      const nlohmann::json& parent) {
  std::vector<const nlohmann::json*> out;
  for (const auto& s : spans) {
    if (s.value("parentSpanId", "") == parent.at("spanId")) out.push_back(&s);
  }
  std::stable_sort(out.begin(), out.end(), [](const nlohmann::json* a, const nlohmann::json* b) {
    return start_of(*a) < start_of(*b);
  });
  return out;
}

// OTLP's Status.code of a span (0: unset, 1: ok, 2: error).
inline int status_of(const nlohmann::json& span) {
  return span.contains("status") ? span.at("status").value("code", 0) : 0;
}

}  // namespace test_support
