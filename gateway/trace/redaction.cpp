#include "gateway/trace/redaction.hpp"

#include "gateway/codec/http_text.hpp"
#include "gateway/config/config_values.hpp"

namespace gateway {

bool secret_query_name(std::string_view name) {
  std::string decoded;  // only for a name with escapes (rare): others are judged as they are
  if (name.find_first_of("%+") != std::string_view::npos) {
    if (percent_decode(name, decoded, true)) name = decoded;
  }
  return credential_name(name) || iequals(name, "sig") || iequals(name, "code") ||
         name.find("ignature") != std::string_view::npos;  // Signature, signature, X-Goog-Signature
}

void append_redacted_target(std::string& out, std::string_view target, std::size_t max_bytes) {
  const auto start = out.size();
  const auto query = target.find('?');
  if (query == std::string_view::npos) {
    out.append(target);
  } else {
    out.append(target.substr(0, query + 1));
    auto rest = target.substr(query + 1);
    while (out.size() - start <= max_bytes) {
      const auto amp = rest.find('&');
      const auto pair = rest.substr(0, amp);
      const auto eq = pair.find('=');
      if (eq != std::string_view::npos && secret_query_name(pair.substr(0, eq))) {
        out.append(pair.substr(0, eq + 1)).append("REDACTED");
      } else {
        out.append(pair);
      }
      if (amp == std::string_view::npos) break;
      out += '&';
      rest.remove_prefix(amp + 1);
    }
  }
  if (out.size() - start > max_bytes) {
    out.resize(start + max_bytes);
    out += "...";
  }
}

}  // namespace gateway
