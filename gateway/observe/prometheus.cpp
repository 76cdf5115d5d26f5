#include "gateway/observe/prometheus.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace gateway {

void prometheus_writer::family(std::string_view name, std::string_view type, std::string_view help) {
  out_.append("# HELP ").append(name).append(" ");
  for (const char c : help) {
    if (c == '\\') {
      out_ += "\\\\";
    } else if (c == '\n') {
      out_ += "\\n";
    } else {
      out_ += c;
    }
  }
  out_.append("\n# TYPE ").append(name).append(" ").append(type).append("\n");
}

void prometheus_writer::labels(label_list list, std::string_view extra_name, std::string_view extra_value) {
  if (list.size() == 0 && extra_name.empty()) return;
  out_ += '{';
  bool first = true;
  auto one = [&](std::string_view name, std::string_view value) {
    if (!first) out_ += ',';
    first = false;
    out_.append(name).append("=\"");
    for (const char c : value) {
      if (c == '\\' || c == '"') {
        out_ += '\\';
        out_ += c;
      } else if (c == '\n') {
        out_ += "\\n";
      } else {
        out_ += c;
      }
    }
    out_ += '"';
  };
  for (const auto& [name, value] : list) {
    if (!value.empty()) one(name, value);  // an empty value is no label (Prometheus reads them alike)
  }
  if (!extra_name.empty()) one(extra_name, extra_value);
  out_ += '}';
}

void prometheus_writer::number(double value) {
  if (std::isnan(value)) {
    out_ += "NaN";
  } else if (std::isinf(value)) {
    out_ += value > 0 ? "+Inf" : "-Inf";
  } else if (value == std::floor(value) && std::fabs(value) < 1e15) {
    out_ += std::to_string(static_cast<long long>(value));
  } else {
    char buffer[32];  // the shortest text that reads back as the same double
    const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
    out_.append(buffer, end);
  }
}

void prometheus_writer::sample(std::string_view name, label_list list, double value) {
  out_.append(name);
  labels(list);
  out_ += ' ';
  number(value);
  out_ += '\n';
}

void prometheus_writer::histogram_sample(std::string_view name, label_list list,
                                         const histogram::snapshot& h) {
  const std::string bucket = std::string(name) + "_bucket";
  std::uint64_t cumulative = 0;
  char le[32];
  const auto& bounds = *h.bounds;
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    cumulative += h.counts[i];
    std::snprintf(le, sizeof le, "%g", bounds[i]);
    out_.append(bucket);
    labels(list, "le", le);
    out_.append(" ").append(std::to_string(cumulative)).append("\n");
  }
  cumulative += h.counts[bounds.size()];
  out_.append(bucket);
  labels(list, "le", "+Inf");
  out_.append(" ").append(std::to_string(cumulative)).append("\n");
  out_.append(name).append("_sum");
  labels(list);
  out_ += ' ';
  number(h.sum_seconds);
  out_.append("\n").append(name).append("_count");
  labels(list);
  out_.append(" ").append(std::to_string(cumulative)).append("\n");
}

}  // namespace gateway
