#include "gateway/config/config.hpp"

namespace gateway {

const downstream_settings* gateway_config::find_downstream(const std::string& name) const {
  for (const auto& d : downstreams) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

}  // namespace gateway
