#pragma once
// A JSON request body built from a route's parameters, e.g. {"sku": "{sku}", "qty": 1}: written as a JSON
// object in the configuration, kept as its serialised text, and expanded per call with every "{name}"
// inside a string value replaced by the parameter's value, escaped for a JSON string (so a value can never
// end the string or add a member; member names take no parameters). Parsed once at config load. Pure.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gateway {

class body_template {
 public:
  // `json`: a serialised JSON object (nlohmann's compact dump()). nullopt and `error` set when a "{...}" in
  // it is not a valid parameter name, or a parameter stands in a member name (only values take them).
  static std::optional<body_template> parse(std::string_view json, std::string& error);

  bool empty() const { return pieces_.empty(); }
  std::vector<std::string> param_names() const;
  const std::string& text() const { return text_; }

  // Appends the expansion to `out`; `lookup(name)` returns a parameter's raw value.
  template <class Lookup>
  void expand(std::string& out, Lookup&& lookup) const {
    for (const auto& p : pieces_) {
      if (p.is_param) {
        append_escaped(out, lookup(p.text));
      } else {
        out += p.text;
      }
    }
  }

 private:
  struct piece {
    bool is_param = false;
    std::string text;
  };
  static void append_escaped(std::string& out, std::string_view value);

  std::vector<piece> pieces_;
  std::string text_;
};

}  // namespace gateway
