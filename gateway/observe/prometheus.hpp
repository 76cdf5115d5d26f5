#pragma once
// Writes the Prometheus text exposition format (version 0.0.4): HELP and TYPE lines, label values
// escaped, histograms as cumulative buckets with _sum and _count.

#include "gateway/runtime/histogram.hpp"

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace gateway {

using label_list = std::initializer_list<std::pair<std::string_view, std::string_view>>;

class prometheus_writer {
 public:
  // Starts a metric family; `type` is counter, gauge or histogram.
  void family(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, label_list labels, double value);
  void histogram_sample(std::string_view name, label_list labels, const histogram::snapshot& h);

  const std::string& text() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void labels(label_list labels, std::string_view extra_name = {}, std::string_view extra_value = {});
  void number(double value);
  std::string out_;
};

}  // namespace gateway
