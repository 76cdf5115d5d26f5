#pragma once
// A strict reader of the Prometheus text exposition format (version 0.0.4) for tests of GET /metrics.
// It never throws: every violation (bad names, escapes or numbers, timestamps, samples without a TYPE,
// families not grouped, series twice, negative counters, malformed histograms) is listed in `problems`,
// and the valid samples are kept.

#include <map>
#include <string>
#include <vector>

namespace test_support {

using label_map = std::map<std::string, std::string>;

struct sample {
  std::string name;
  label_map labels;
  double value = 0;
};

struct exposition {
  std::vector<sample> samples;
  std::map<std::string, std::string> types;  // family -> counter | gauge | histogram
  std::vector<std::string> problems;         // empty when the text is valid
};

exposition parse_exposition(const std::string& text);

// Sum of the samples named `name` whose labels include all of `match` (0 when there are none).
double total(const exposition& e, const std::string& name, const label_map& match = {});
// Whether there is such a sample at all (at any value, zero too).
bool has_sample(const exposition& e, const std::string& name, const label_map& match = {});

// The problems one per line, for a test's message.
std::string text_of(const std::vector<std::string>& problems);

}  // namespace test_support
