#include "gateway/config/yaml_reader.hpp"

#include "gateway/config/config_values.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include <charconv>
#include <limits>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

namespace gateway {
namespace {

// Well-formed UTF-8: shortest forms, no surrogates, nothing above U+10FFFF (what JSON output requires).
bool valid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char b = byte(i);
    if (b < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = 0;
    unsigned char low = 0x80;
    unsigned char high = 0xbf;  // range of the second byte; the others are always 80-bf
    if (b >= 0xc2 && b <= 0xdf) {
      length = 2;
    } else if (b >= 0xe0 && b <= 0xef) {
      length = 3;
      if (b == 0xe0) low = 0xa0;   // overlong
      if (b == 0xed) high = 0x9f;  // surrogates
    } else if (b >= 0xf0 && b <= 0xf4) {
      length = 4;
      if (b == 0xf0) low = 0x90;   // overlong
      if (b == 0xf4) high = 0x8f;  // above U+10FFFF
    } else {
      return false;
    }
    if (i + length > text.size() || byte(i + 1) < low || byte(i + 1) > high) return false;
    for (std::size_t k = 2; k < length; ++k) {
      if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return false;
    }
    i += length;
  }
  return true;
}

// Converts a YAML value to JSON; scalars become numbers/booleans/null when they read as such. A key or
// value that is not valid UTF-8 gives nothing, with `bad_text` pointing at it.
std::optional<nlohmann::json> to_json(const YAML::Node& node, std::optional<YAML::Mark>& bad_text,
                                      int depth = 0) {
  if (depth > 32) return std::nullopt;
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return nlohmann::json(nullptr);
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (!valid_utf8(s)) {
        bad_text = node.Mark();
        return std::nullopt;
      }
      if (node.Tag() == "!") return nlohmann::json(s);  // quoted: always a string
      if (s == "true") return nlohmann::json(true);
      if (s == "false") return nlohmann::json(false);
      if (s == "null" || s == "~") return nlohmann::json(nullptr);
      long long i = 0;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
      if (ec == std::errc{} && p == s.data() + s.size() && !s.empty()) return nlohmann::json(i);
      double d = 0;
      auto [p2, ec2] = std::from_chars(s.data(), s.data() + s.size(), d);
      if (ec2 == std::errc{} && p2 == s.data() + s.size() && !s.empty()) return nlohmann::json(d);
      return nlohmann::json(s);
    }
    case YAML::NodeType::Sequence: {
      auto arr = nlohmann::json::array();
      for (const auto& item : node) {
        auto v = to_json(item, bad_text, depth + 1);
        if (!v) return std::nullopt;
        arr.push_back(std::move(*v));
      }
      return arr;
    }
    case YAML::NodeType::Map: {
      auto obj = nlohmann::json::object();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) return std::nullopt;
        if (!valid_utf8(kv.first.Scalar())) {
          bad_text = kv.first.Mark();
          return std::nullopt;
        }
        auto v = to_json(kv.second, bad_text, depth + 1);
        if (!v) return std::nullopt;
        obj[kv.first.Scalar()] = std::move(*v);
      }
      return obj;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace

yaml_reader::yaml_reader(const YAML::Node& node, std::vector<config_error>& errors, std::string what)
    : errors_(errors), what_(std::move(what)), node_(node) {
  if (!node.IsMap()) {
    report(errors_, node, what_ + " must be a mapping");
    return;
  }
  valid_ = true;
  for (const auto& kv : node) entries_.emplace_back(kv.first, kv.second);
}

void yaml_reader::report(std::vector<config_error>& errors, const YAML::Node& node,
                         const std::string& message) {
  report(errors, node.Mark(), message);
}

void yaml_reader::report(std::vector<config_error>& errors, const YAML::Mark& mark,
                         const std::string& message) {
  errors.push_back({mark.line + 1, mark.column + 1, message});
}

std::optional<YAML::Mark> yaml_reader::mark_of(const std::string& key) const {
  for (const auto& [k, v] : entries_) {
    if (k.IsScalar() && k.Scalar() == key) return v.Mark();
  }
  return std::nullopt;
}

bool yaml_reader::utf8(const YAML::Node& value, const std::string& key) {
  if (valid_utf8(value.Scalar())) return true;
  report(errors_, value, what_ + "." + key + ": not valid UTF-8");
  return false;
}

const YAML::Node* yaml_reader::find(const std::string& key) {
  used_.insert(key);
  for (const auto& [k, v] : entries_) {
    if (k.IsScalar() && k.Scalar() == key) return &v;
  }
  return nullptr;
}

void yaml_reader::error_at(const std::string& key, const std::string& message) {
  used_.insert(key);  // reported already: not "unknown" as well
  for (const auto& [k, v] : entries_) {
    if (k.IsScalar() && k.Scalar() == key) {
      report(errors_, v, what_ + "." + key + ": " + message);
      return;
    }
  }
  report(errors_, node_, what_ + "." + key + ": " + message);
}

void yaml_reader::error_here(const std::string& message) {
  report(errors_, node_, what_ + ": " + message);
}

namespace {
thread_local std::vector<std::string>* secret_values = nullptr;
thread_local yaml_reader::key_map* known_keys = nullptr;
}  // namespace

yaml_reader::secret_collector::secret_collector(std::vector<std::string>& values)
    : previous_(std::exchange(secret_values, &values)) {}

yaml_reader::secret_collector::~secret_collector() {
  secret_values = previous_;
}

yaml_reader::known_keys_collector::known_keys_collector(key_map& keys)
    : previous_(std::exchange(known_keys, &keys)) {}

yaml_reader::known_keys_collector::~known_keys_collector() {
  known_keys = previous_;
}

bool yaml_reader::substituted(const YAML::Node& value, const std::string& key, std::string& text) {
  const std::string& raw = value.Scalar();
  if (raw.find("${") == std::string::npos) {
    text = raw;
    return true;
  }
  bool used = false;
  bool secret = false;
  std::string problem;
  if (!substitute_env(raw, text, used, problem, &secret)) {
    report(errors_, value, what_ + "." + key + ": " + problem);
    return false;
  }
  if (used) from_env_.insert(key);
  if (secret && secret_values != nullptr && !text.empty()) secret_values->push_back(text);
  return true;
}

bool yaml_reader::scalar_text(const std::string& key, const YAML::Node*& value, std::string& text) {
  return scalar(key, value) && substituted(*value, key, text);
}

bool yaml_reader::scalar(const std::string& key, const YAML::Node*& value) {
  value = find(key);
  if (!value) return false;
  if (!value->IsScalar()) {
    const auto advice = advice_.find(key);
    report(errors_, *value,
           what_ + "." + key + ": expected a scalar value" +
               (advice != advice_.end() ? "; " + advice->second : std::string()));
    return false;
  }
  return true;
}

bool yaml_reader::string(const std::string& key, std::string& out, bool required) {
  const YAML::Node* v = nullptr;
  if (!scalar(key, v)) {
    if (!v && required && valid_) report(errors_, node_, what_ + ": missing required key '" + key + "'");
    return false;
  }
  if (!utf8(*v, key)) return false;
  return substituted(*v, key, out);
}

bool yaml_reader::boolean(const std::string& key, bool& out) {
  const YAML::Node* v = nullptr;
  std::string text;
  if (!scalar_text(key, v, text)) return false;
  if (text == "true") {
    out = true;
  } else if (text == "false") {
    out = false;
  } else {
    report(errors_, *v, what_ + "." + key + ": expected true or false");
    return false;
  }
  return true;
}

bool yaml_reader::size(const std::string& key, std::size_t& out, std::size_t min, std::size_t max) {
  const YAML::Node* v = nullptr;
  std::string s;
  if (!scalar_text(key, v, s)) return false;
  std::size_t value = 0;
  std::size_t scale = 1;
  std::string_view digits = s;
  if (digits.ends_with("KiB")) {
    scale = 1024;
    digits.remove_suffix(3);
  } else if (digits.ends_with("MiB")) {
    scale = 1024 * 1024;
    digits.remove_suffix(3);
  } else if (digits.ends_with("GiB")) {
    scale = std::size_t{1024} * 1024 * 1024;
    digits.remove_suffix(3);
  }
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || ec != std::errc{} || p != digits.data() + digits.size() ||
      value > std::numeric_limits<std::size_t>::max() / scale) {
    report(errors_, *v, what_ + "." + key + ": expected a non-negative integer (KiB/MiB/GiB suffix allowed)");
    return false;
  }
  value *= scale;
  if (value < min || value > max) {
    report(errors_, *v,
           what_ + "." + key + ": must be between " + std::to_string(min) + " and " + std::to_string(max));
    return false;
  }
  out = value;
  return true;
}

bool yaml_reader::unsigned_int(const std::string& key, unsigned& out, unsigned min, unsigned max) {
  std::size_t value = out;
  if (!size(key, value, min, max)) return false;
  out = static_cast<unsigned>(value);
  return true;
}

bool yaml_reader::duration(const std::string& key, microseconds& out, bool allow_zero) {
  const YAML::Node* v = nullptr;
  std::string text;
  if (!scalar_text(key, v, text)) return false;
  auto d = parse_duration(text);
  if (!d || d->count() < (allow_zero ? 0 : 1) || *d > std::chrono::hours(24)) {
    report(errors_, *v,
           what_ + "." + key + ": expected a " + (allow_zero ? "" : "positive ") +
               "duration such as 150ms, 2s or 1m");
    return false;
  }
  out = *d;
  return true;
}

bool yaml_reader::string_list(const std::string& key, std::vector<std::string>& out) {
  const YAML::Node* v = find(key);
  if (!v) return false;
  if (!v->IsSequence()) {
    report(errors_, *v, what_ + "." + key + ": expected a list of strings");
    return false;
  }
  out.clear();
  for (const auto& item : *v) {
    if (!item.IsScalar()) {
      report(errors_, item, what_ + "." + key + ": expected a string");
      return false;
    }
    if (!utf8(item, key)) return false;
    std::string text;
    if (!substituted(item, key, text)) return false;
    out.push_back(std::move(text));
  }
  return true;
}

bool yaml_reader::json_object(const std::string& key, nlohmann::json& out) {
  const YAML::Node* v = find(key);
  if (!v) return false;
  std::optional<YAML::Mark> bad_text;
  auto j = v->IsMap() ? to_json(*v, bad_text) : std::nullopt;
  if (bad_text) {
    report(errors_, *bad_text, what_ + "." + key + ": not valid UTF-8");
    return false;
  }
  if (!j || !j->is_object()) {
    report(errors_, *v, what_ + "." + key + ": expected a mapping (a JSON object)");
    return false;
  }
  out = std::move(*j);
  return true;
}

std::optional<YAML::Node> yaml_reader::section(const std::string& key, kind k, bool required) {
  const YAML::Node* v = find(key);
  if (!v) {
    if (required && valid_) report(errors_, node_, what_ + ": missing required key '" + key + "'");
    return std::nullopt;
  }
  const bool ok = k == kind::map ? v->IsMap() : v->IsSequence();
  if (!ok) {
    report(errors_, *v, what_ + "." + key + (k == kind::map ? ": expected a mapping" : ": expected a list"));
    return std::nullopt;
  }
  return *v;
}

bool yaml_reader::one_of(const std::string& key, std::size_t& index, std::span<const std::string_view> names,
                         const std::string& noun) {
  std::string value;
  if (!string(key, value)) return false;
  const auto at = std::find(names.begin(), names.end(), value);
  if (at != names.end()) {
    index = static_cast<std::size_t>(at - names.begin());
    return true;
  }
  std::string message = noun + " must be ";
  if (names.size() == 2) {
    message += "'" + std::string(names[0]) + "' or '" + std::string(names[1]) + "'";
  } else {
    message += "one of ";
    for (std::size_t i = 0; i < names.size(); ++i) message += (i == 0 ? "" : ", ") + std::string(names[i]);
  }
  error_at(key, message);
  return false;
}

void yaml_reader::each_entry(const std::string& item,
                             const std::function<void(const std::string&, yaml_reader&)>& fn) {
  iterated_ = true;
  for (const auto& [k, v] : entries_) {
    if (!k.IsScalar() || k.Scalar().empty()) {
      report(errors_, k, what_ + ": keys must be non-empty strings");
      continue;
    }
    if (!valid_utf8(k.Scalar())) {
      report(errors_, k, what_ + ": key is not valid UTF-8");
      continue;
    }
    yaml_reader entry(v, errors_, item + " '" + k.Scalar() + "'");
    fn(k.Scalar(), entry);
    entry.finish();
  }
}

namespace {

// The edit distance between two keys (insertions, deletions, substitutions and swaps of neighbours, each
// one step), for suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] =
          std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// The known key closest to `name`, when it is close enough to be a slip (at most two steps, and fewer
// than half its length); empty otherwise.
std::string closest_key(const std::string& name, const std::set<std::string>& known) {
  std::string best;
  std::size_t best_distance = 3;
  for (const auto& key : known) {
    const auto distance = edit_distance(name, key);
    if (distance < best_distance && distance * 2 < std::max(name.size(), key.size())) {
      best = key;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace

void yaml_reader::finish() {
  if (!valid_) return;
  if (known_keys != nullptr) (*known_keys)[what_].insert(used_.begin(), used_.end());
  std::set<std::string> seen;
  for (const auto& [k, v] : entries_) {
    const std::string name = k.IsScalar() ? k.Scalar() : std::string("?");
    if (!seen.insert(name).second) report(errors_, k, what_ + ": duplicate key '" + name + "'");
    if (iterated_ || used_.contains(name)) continue;
    if (const auto advice = advice_.find(name); advice != advice_.end()) {
      report(errors_, k, what_ + ": unknown key '" + name + "': " + advice->second);
      continue;
    }
    // A key the section knows (it asked for it) that is close: the likely intent.
    const auto suggestion = name.size() <= 64 ? closest_key(name, used_) : std::string();
    report(errors_, k,
           what_ + ": unknown key '" + name + "'" +
               (suggestion.empty() ? std::string() : ", did you mean '" + suggestion + "'?"));
  }
}

}  // namespace gateway
