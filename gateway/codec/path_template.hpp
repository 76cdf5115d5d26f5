#pragma once
// A downstream path with {param} placeholders, e.g. "/inventory?sku={sku}".
// Parsed once at config load; expanded per call with every value percent-encoded so that a value can
// never add a path segment, a query, a fragment or a header line (only A-Z a-z 0-9 - _ ~ pass through).
// The one exception, "{name*}" in the path part: the value's '/'-separated segments are encoded each and
// joined by '/', so a route's catch-all ("/files/{rest*}") passes its segments on (route_params refuses
// "." and ".." segments in it).

#include "gateway/codec/http_text.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gateway {

class path_template {
 public:
  struct piece {
    bool is_param = false;
    bool segments = false;  // "{name*}": the value's segments kept apart
    std::string text;       // literal text, or the parameter name
  };

  // Returns nullopt and sets `error` when braces are unbalanced/empty/nested, the text has control
  // characters or spaces, or it does not start with '/'.
  static std::optional<path_template> parse(std::string_view text, std::string& error);

  const std::vector<piece>& pieces() const { return pieces_; }
  std::vector<std::string> param_names() const;

  // Appends the expansion to `out`; `lookup(name)` returns the raw (decoded) value of a parameter.
  template <class Lookup>
  void expand(std::string& out, Lookup&& lookup) const {
    for (const auto& p : pieces_) {
      if (p.segments) {
        std::string_view value = lookup(p.text);
        for (auto slash = value.find('/');; slash = value.find('/')) {
          percent_encode(value.substr(0, slash), out);
          if (slash == std::string_view::npos) break;
          out += '/';
          value.remove_prefix(slash + 1);
        }
      } else if (p.is_param) {
        percent_encode(lookup(p.text), out);
      } else {
        out += p.text;
      }
    }
  }

 private:
  std::vector<piece> pieces_;
};

}  // namespace gateway
