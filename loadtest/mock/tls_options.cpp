#include "loadtest/mock/tls_options.hpp"

#include "loadtest/mock/options.hpp"

namespace mock {

bool apply_tls_option(std::string_view arg, std::string_view value, tls_options& tls, std::string& why) {
  if (arg == "--tls-listen") {
    const auto address = parse_listen_address(value);
    if (!address) return false;
    if (tls.listen.size() == mock_options::max_listeners) {
      why = "at most " + std::to_string(mock_options::max_listeners) + " TLS listeners";
      return false;
    }
    tls.listen.push_back(*address);
    return true;
  }
  if (value.empty()) return false;
  if (arg == "--tls-cert") {
    tls.cert_file = std::string(value);
  } else if (arg == "--tls-key") {
    tls.key_file = std::string(value);
  } else {
    tls.client_ca_file = std::string(value);
  }
  return true;
}

std::string tls_options_problem(const tls_options& tls) {
  if (!tls.listen.empty() && (tls.cert_file.empty() || tls.key_file.empty()))
    return "--tls-listen needs --tls-cert and --tls-key";
  if (tls.listen.empty() && (!tls.cert_file.empty() || !tls.key_file.empty() || !tls.client_ca_file.empty()))
    return "--tls-cert, --tls-key and --tls-client-ca need --tls-listen";
  return {};
}

}  // namespace mock
