#pragma once
// Reads one YAML mapping into settings: typed getters that report wrong types and out-of-range values
// at the value's line:column, and finish() that reports duplicate and unknown keys. Every string handed
// out (values, list items, JSON object keys and values, entry keys) is valid UTF-8; other text is
// reported where it is. Never throws.

#include "gateway/config/config_loader.hpp"

#include <yaml-cpp/yaml.h>
#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gateway {

class yaml_reader {
 public:
  enum class kind { map, sequence };

  // `what` names the mapping in messages ("server", "downstream 'coupon'").
  yaml_reader(const YAML::Node& node, std::vector<config_error>& errors, std::string what);

  bool valid() const { return valid_; }

  // Each getter returns true when the key is present and its value is valid (then `out` is set).
  bool string(const std::string& key, std::string& out, bool required = false);
  bool boolean(const std::string& key, bool& out);
  bool unsigned_int(const std::string& key, unsigned& out, unsigned min, unsigned max);
  bool size(const std::string& key, std::size_t& out, std::size_t min, std::size_t max);  // KiB MiB GiB
  bool duration(const std::string& key, microseconds& out, bool allow_zero = false);
  bool string_list(const std::string& key, std::vector<std::string>& out);
  bool json_object(const std::string& key, nlohmann::json& out);
  std::optional<YAML::Node> section(const std::string& key, kind k = kind::map, bool required = false);

  // A string that must be one of `names`: `index` is set to its position. Anything else is reported as
  // "NOUN must be 'a' or 'b'" (two names) or "NOUN must be one of a, b, c".
  bool one_of(const std::string& key, std::size_t& index, std::span<const std::string_view> names,
              const std::string& noun);

  // For a name-keyed mapping (downstreams, params): calls `fn(name, entry)` for every entry, `entry` a
  // reader of its value named "ITEM 'NAME'" in messages, finished (unknown keys reported) after `fn`.
  void each_entry(const std::string& item, const std::function<void(const std::string&, yaml_reader&)>& fn);

  void error_at(const std::string& key, const std::string& message);
  void error_here(const std::string& message);  // at the mapping itself
  static void report(std::vector<config_error>& errors, const YAML::Node& node, const std::string& message);
  static void report(std::vector<config_error>& errors, const YAML::Mark& mark, const std::string& message);

  // Where the value of `key` is, for a check that needs several sections (reported after both are read).
  std::optional<YAML::Mark> mark_of(const std::string& key) const;

  // Adds `advice` (what to write instead) to this reader's own message about `key`: its value of the
  // wrong kind, or the key unknown here. Call before reading the key (or before finish()).
  void advise(const std::string& key, std::string advice) { advice_[key] = std::move(advice); }

  // Reports unknown keys (every key not asked for) and duplicates.
  void finish();

  // Whether the value of `key` (read by a getter) took something from the environment.
  bool from_environment(const std::string& key) const { return from_env_.contains(key); }

  // While one lives on a thread, the values readers on that thread took from a credential's environment
  // variable (substitute_env's `secret`) are collected in `values`, to be hidden wherever shown.
  class secret_collector {
   public:
    explicit secret_collector(std::vector<std::string>& values);
    secret_collector(const secret_collector&) = delete;
    secret_collector& operator=(const secret_collector&) = delete;
    ~secret_collector();

   private:
    std::vector<std::string>* previous_;
  };

  // While one lives on a thread, every reader on that thread adds, as it finishes, the keys its mapping
  // knows (every key it asked for) to `keys`, under its name in messages ("server", "downstream 'a'.retry"):
  // what the schema's drift test compares with config/gateway.schema.json.
  using key_map = std::map<std::string, std::set<std::string>>;
  class known_keys_collector {
   public:
    explicit known_keys_collector(key_map& keys);
    known_keys_collector(const known_keys_collector&) = delete;
    known_keys_collector& operator=(const known_keys_collector&) = delete;
    ~known_keys_collector();

   private:
    key_map* previous_;
  };

 private:
  const YAML::Node* find(const std::string& key);
  bool scalar(const std::string& key, const YAML::Node*& value);
  // A scalar value's text with ${ENV} references replaced (reported at the value when they fail).
  bool scalar_text(const std::string& key, const YAML::Node*& value, std::string& text);
  bool substituted(const YAML::Node& value, const std::string& key, std::string& text);
  bool utf8(const YAML::Node& value, const std::string& key);  // reports when not

  std::vector<std::pair<YAML::Node, YAML::Node>> entries_;
  std::set<std::string> used_;
  std::set<std::string> from_env_;
  std::map<std::string, std::string> advice_;
  std::vector<config_error>& errors_;
  std::string what_;
  YAML::Node node_;
  bool valid_ = false;
  bool iterated_ = false;
};

}  // namespace gateway
