#pragma once
// The admin listener's live status: GET /status.json (status_json) and GET / (status_page_html: one
// self-contained page, inline CSS and JS, that polls /status.json and draws tables). Rates, latencies and
// shares cover a recent window: the difference between the metrics registry's summary now and one a
// status_window kept about 30 s earlier. The admin thread takes those samples (every few seconds and at
// each request), so the request path pays nothing beyond its usual metrics. Admin thread only.

#include "gateway/observe/metrics.hpp"
#include "gateway/runtime/duration.hpp"
#include "gateway/runtime/histogram.hpp"

#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gateway {

struct admin_sources;
struct config_generation;

// What the status page shows as rates, at one moment.
struct status_sample {
  clock::time_point at;
  metrics_summary metrics;
  std::vector<std::pair<std::string, histogram::snapshot>> db_waits;  // semaphore waits, by database name
};

// The samples a window needs: one at least `span` old (the baseline) and the newer ones, at most one per
// span / 6. Starts with an empty sample (every counter at zero) at `start`.
class status_window {
 public:
  static constexpr clock::duration default_span = std::chrono::seconds(30);

  explicit status_window(clock::time_point start, clock::duration span = default_span);

  // Keeps `s` when the newest sample kept is at least span / 6 older; drops those no baseline needs.
  void keep(status_sample s);
  // What a sample taken at `now` is compared with: the newest at least `span` older, else the oldest.
  const status_sample& baseline(clock::time_point now) const;
  clock::duration span() const { return span_; }
  clock::duration period() const { return span_ / 6; }
  std::size_t size() const { return samples_.size(); }

 private:
  clock::duration span_;
  std::deque<status_sample> samples_;  // oldest first
};

// The sample of the process now: the registry's summary and the current generation's databases.
status_sample take_status_sample(const admin_sources& from, const config_generation& current);

// The body of GET /status.json; keeps the sample it takes in from.status.
std::string status_json(const admin_sources& from, const config_generation& current);

// The estimated quantile `q` (0..1) of a histogram's observations, in seconds: linear within the bucket,
// as Prometheus' histogram_quantile; the largest finite bound for the +Inf bucket; nullopt when empty.
std::optional<double> histogram_quantile(const histogram::snapshot& h, double q);

// `now` less `then`, per bucket (never below zero).
histogram::snapshot histogram_difference(const histogram::snapshot& now, const histogram::snapshot& then);

// The page of GET / (compiled in; no external assets).
std::string_view status_page_html();

}  // namespace gateway
