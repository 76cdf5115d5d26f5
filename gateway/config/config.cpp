#include "gateway/config/config.hpp"

namespace gateway {

std::size_t server_settings::stack_bytes() const {
#ifdef GATEWAY_SANITIZE
  return coroutine_stack * 4;
#else
  return coroutine_stack;
#endif
}

const downstream_settings* gateway_config::find_downstream(const std::string& name) const {
  for (const auto& d : downstreams) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

}  // namespace gateway
