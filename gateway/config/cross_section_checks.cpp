// Settings that are valid alone but cannot work together, checked once every section is read (also by
// `gateway --check`, which loads the file the same way).

#include "gateway/config/config_json.hpp"
#include "gateway/config/config_sections.hpp"
#include "gateway/config/config_values.hpp"
#include "gateway/config/yaml_reader.hpp"

namespace gateway {

void check_across_sections(config_parse_state& state, const gateway_config& cfg) {
  if (listeners_overlap(cfg.server.listen, cfg.admin.listen) &&
      (state.admin_listen_at || state.server_listen_at)) {
    const auto at = state.admin_listen_at ? *state.admin_listen_at : *state.server_listen_at;
    yaml_reader::report(state.errors, at,
                        std::string(state.admin_listen_at ? "admin.listen" : "server.listen") +
                            ": the admin listener and the public listener overlap (server.listen " +
                            format_listen(cfg.server.listen) + ", admin.listen " +
                            format_listen(cfg.admin.listen) + "): give them different ports");
  }
  // Each I/O thread keeps its own connections to an HTTP downstream, an equal share of max_connections
  // and at least one; fewer than the threads cannot be shared out (threads: 0 is checked at start).
  for (const auto& [name, at] : state.downstream_max_at) {
    const auto* d = cfg.find_downstream(name);
    if (cfg.server.threads == 0 || d == nullptr || d->kind != downstream_kind::http ||
        d->max_connections >= cfg.server.threads) {
      continue;
    }
    yaml_reader::report(state.errors, at,
                        "downstreams." + name + ".max_connections: " + std::to_string(d->max_connections) +
                            " is less than server.threads " + std::to_string(cfg.server.threads) +
                            ": each I/O thread keeps its own connections and needs at least one");
  }
}

}  // namespace gateway
