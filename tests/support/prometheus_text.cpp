#include "tests/support/prometheus_text.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <utility>

namespace test_support {

namespace {

const std::regex metric_name(R"([a-zA-Z_:][a-zA-Z0-9_:]*)");
const std::regex label_name(R"([a-zA-Z_][a-zA-Z0-9_]*)");
const std::regex decimal(R"([-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)");

std::optional<double> parse_number(const std::string& s) {
  if (s == "+Inf") return std::numeric_limits<double>::infinity();
  if (s == "-Inf") return -std::numeric_limits<double>::infinity();
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (!std::regex_match(s, decimal)) return std::nullopt;
  return std::strtod(s.c_str(), nullptr);
}

// `name{a="x",b="y"} value`; returns the problem, or "" when the line is a valid sample.
std::string parse_sample(const std::string& line, sample& out) {
  std::size_t i = 0;
  while (i < line.size() &&
         (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' || line[i] == ':'))
    ++i;
  out.name = line.substr(0, i);
  if (!std::regex_match(out.name, metric_name)) return "bad metric name";
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (i < line.size() && line[i] != '}') {
      const auto eq = line.find('=', i);
      if (eq == std::string::npos) return "label without '='";
      const std::string name = line.substr(i, eq - i);
      if (!std::regex_match(name, label_name)) return "bad label name '" + name + "'";
      if (eq + 1 >= line.size() || line[eq + 1] != '"') return "label value not quoted";
      std::string value;
      for (i = eq + 2; i < line.size() && line[i] != '"'; ++i) {
        if (line[i] != '\\') {
          value += line[i];
          continue;
        }
        if (++i >= line.size()) return "label value ends in a backslash";
        if (line[i] == 'n') {
          value += '\n';
        } else if (line[i] == '\\' || line[i] == '"') {
          value += line[i];
        } else {
          return std::string("bad escape \\") + line[i];
        }
      }
      if (i >= line.size()) return "unterminated label value";
      if (!out.labels.emplace(name, value).second) return "label '" + name + "' twice";
      ++i;  // closing quote
      if (i < line.size() && line[i] == ',') ++i;
    }
    if (i >= line.size()) return "unterminated label set";
    ++i;  // '}'
  }
  if (i >= line.size() || line[i] != ' ') return "no single space before the value";
  const auto value = parse_number(line.substr(i + 1));
  if (!value) return "bad value '" + line.substr(i + 1) + "'";
  out.value = *value;
  return "";
}

std::string series_key(const std::string& name, const label_map& labels) {
  std::string key = name + "{";
  for (const auto& [k, v] : labels) key += k + "=\"" + v + "\",";
  return key + "}";
}

struct histogram_series {
  std::vector<std::pair<double, double>> buckets;  // (le, cumulative count) in text order
  std::optional<double> count;
  bool has_sum = false;
};

void check_histograms(const std::map<std::string, histogram_series>& histograms,
                      std::vector<std::string>& problems) {
  for (const auto& [key, h] : histograms) {
    auto problem = [&](const std::string& what) { problems.push_back(key + ": " + what); };
    if (h.buckets.empty()) problem("no buckets");
    for (std::size_t i = 1; i < h.buckets.size(); ++i) {
      if (!(h.buckets[i].first > h.buckets[i - 1].first)) problem("le bounds not increasing");
      if (h.buckets[i].second < h.buckets[i - 1].second) problem("bucket counts not cumulative");
    }
    if (h.buckets.empty() || !std::isinf(h.buckets.back().first)) problem("no le=\"+Inf\" bucket last");
    if (!h.count) problem("no _count");
    if (!h.has_sum) problem("no _sum");
    if (!h.buckets.empty() && h.count && h.buckets.back().second != *h.count)
      problem("+Inf bucket != _count");
  }
}

}  // namespace

exposition parse_exposition(const std::string& text) {
  exposition e;
  std::set<std::string> helped, started, finished, series;
  std::string current;
  std::map<std::string, histogram_series> histograms;
  auto enter = [&](const std::string& family) {
    if (family == current) return true;
    if (!current.empty()) finished.insert(current);
    current = family;
    return !finished.contains(family);
  };
  auto family_of = [&](const std::string& name) -> std::string {
    if (e.types.contains(name)) return e.types[name] == "histogram" ? "" : name;
    for (std::string suffix : {"_bucket", "_sum", "_count"}) {
      if (!name.ends_with(suffix)) continue;
      const auto base = name.substr(0, name.size() - suffix.size());
      if (auto t = e.types.find(base); t != e.types.end() && t->second == "histogram") return base;
    }
    return "";
  };

  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    auto problem = [&](const std::string& what) {
      e.problems.push_back("line " + std::to_string(n) + ": " + what + ": " + line);
    };
    if (line.empty()) continue;
    std::smatch m;
    if (line.starts_with("# HELP ")) {
      static const std::regex help(R"(# HELP ([^ ]+) (.*))");
      if (!std::regex_match(line, m, help) || !std::regex_match(m[1].str(), metric_name)) {
        problem("bad HELP line");
      } else if (!helped.insert(m[1]).second) {
        problem("second HELP");
      } else if (!enter(m[1])) {
        problem("family continued after another one");
      }
      continue;
    }
    if (line.starts_with("# TYPE ")) {
      static const std::regex type(R"(# TYPE ([^ ]+) (counter|gauge|histogram))");
      if (!std::regex_match(line, m, type) || !std::regex_match(m[1].str(), metric_name)) {
        problem("bad TYPE line");
      } else if (e.types.contains(m[1])) {
        problem("second TYPE");
      } else if (started.contains(m[1])) {
        problem("TYPE after the family's samples");
      } else {
        e.types[m[1]] = m[2];
        if (!enter(m[1])) problem("family continued after another one");
      }
      continue;
    }
    sample s;
    if (auto why = parse_sample(line, s); !why.empty()) {
      problem(why);
      continue;
    }
    const auto family = family_of(s.name);
    if (family.empty()) {
      problem("sample without a TYPE for its family");
      continue;
    }
    started.insert(family);
    if (!enter(family)) problem("family continued after another one");
    if (!series.insert(series_key(s.name, s.labels)).second) problem("series twice");
    const auto& type = e.types[family];
    if (type == "counter" && !(s.value >= 0)) problem("counter negative or NaN");
    if (type == "histogram") {
      auto labels = s.labels;
      labels.erase("le");
      auto& h = histograms[series_key(family, labels)];
      if (s.name.ends_with("_bucket")) {
        if (!(s.value >= 0) || s.value != std::floor(s.value)) problem("bucket count not a whole number");
        const auto le = parse_number(s.labels.contains("le") ? s.labels["le"] : std::string());
        h.buckets.emplace_back(le.value_or(std::numeric_limits<double>::quiet_NaN()), s.value);
        if (!le) problem("bucket without a numeric le");
      } else if (s.name.ends_with("_count")) {
        h.count = s.value;
      } else {
        h.has_sum = true;
      }
    }
    e.samples.push_back(std::move(s));
  }
  check_histograms(histograms, e.problems);
  return e;
}

namespace {

bool matches(const sample& s, const std::string& name, const label_map& match) {
  if (s.name != name) return false;
  for (const auto& [k, v] : match) {
    auto it = s.labels.find(k);
    if (it == s.labels.end() || it->second != v) return false;
  }
  return true;
}

}  // namespace

double total(const exposition& e, const std::string& name, const label_map& match) {
  double sum = 0;
  for (const auto& s : e.samples) {
    if (matches(s, name, match)) sum += s.value;
  }
  return sum;
}

bool has_sample(const exposition& e, const std::string& name, const label_map& match) {
  for (const auto& s : e.samples) {
    if (matches(s, name, match)) return true;
  }
  return false;
}

std::string text_of(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems) out += p + "\n";
  return out;
}

}  // namespace test_support
