#pragma once
// The readers of the configuration's sections, for config_loader only (it includes yaml-cpp). Each reads
// one section into its settings struct, whose defaults stay where a key is not written, and adds every
// problem it finds to state.errors at the offending node; none throws. The loader reads routes after
// downstreams (a call refers to its downstream), then check_across_sections() checks the settings that
// are valid alone but cannot work together.
// Threading and ownership: plain functions on the loading thread; config_parse_state lives for one load
// and borrows the loader's error list.

#include "gateway/config/config.hpp"
#include "gateway/config/config_loader.hpp"

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gateway {

// What the readers share while one configuration loads.
struct config_parse_state {
  std::vector<config_error>& errors;
  std::vector<config_error>& warnings;  // config_load_result::warnings
  // Where values checked against other sections were written (unset: not written, the default applies).
  std::optional<YAML::Mark> server_listen_at;
  std::optional<YAML::Mark> admin_listen_at;
  std::vector<std::pair<std::string, YAML::Mark>> downstream_max_at;  // downstream -> its max_connections
  bool offline = false;                      // load_options::offline: TLS files are not read
  std::optional<YAML::Mark> redis_limit_at;  // the first rate_limit with backend: redis
};

// server_sections.cpp
void read_server(config_parse_state& state, const YAML::Node& node, server_settings& s);
void read_limits(config_parse_state& state, const YAML::Node& node, limits_settings& l);
void read_log(config_parse_state& state, const YAML::Node& node, log_settings& l);
void read_admin(config_parse_state& state, const YAML::Node& node, admin_settings& a);
void read_shutdown(config_parse_state& state, const YAML::Node& node, shutdown_settings& s);
void read_tracing(config_parse_state& state, const YAML::Node& node, tracing_config& t);

// header_sections.cpp: a route's or a call's `headers` (`remove` for calls and pass-through routes only),
// what a call's requests carry with its route's policy applied, and server.forwarded /
// server.trusted_proxies. The fields a policy may not forward or set depend on whose it is: an aggregate
// route's and a call's may name none of the gateway's own (core/owned_fields.hpp); a pass-through route's
// none of the framing, identity, Host, Expect and trace fields.
enum class policy_owner { route, call, proxy_route };
void read_header_policy(config_parse_state& state, const YAML::Node& node, const std::string& what,
                        policy_owner owner, header_policy& out);
header_policy effective_policy(const header_policy& route, const header_policy& call);
// response_header_sections.cpp: a route's or a call's `response_headers` (`cache_control` for routes only),
// and a call's effective one (the call's lists added to the route's).
void read_response_header_policy(config_parse_state& state, const YAML::Node& node, const std::string& what,
                                 bool call, response_header_policy& out);
response_header_policy effective_response_policy(const response_header_policy& route,
                                                 const response_header_policy& call);
class yaml_reader;
// A call's `pass_status` and `pass_headers` (response_header_sections.cpp), from the call's reader.
void read_passed_answer(yaml_reader& r, passed_answer_policy& out);
void read_forwarding(yaml_reader& r, server_settings& s);

// composition_sections.cpp: a call's composition keys (after, for_each, max_items, concurrency, when) and
// shaping (target, omit, rename, group, flatten), read with the call; then, once a route's calls are all
// read, the graph checked (names, references, cycles) and the fan-out's slots laid out. `nodes` holds each
// call's YAML node, aligned with route.calls (for positions). A route's own `rename` and `omit`.
void read_call_composition(yaml_reader& r, call_settings& call);
void read_route_shaping(yaml_reader& r, call_shaping& out);  // rename and omit, of a route or a call
void check_composition(config_parse_state& state, const std::vector<YAML::Node>& nodes,
                       aggregate_route& route);
// Whether a "{name}" of a call's path or body template is left to check_composition (a reference to an
// answer, "{call.field}" or "{item...}") rather than a parameter that must be declared.
bool names_reference(const aggregate_route& route, const std::string& name);

// downstream_sections.cpp: the `downstreams` mapping, HTTP and SQL; and the `tls` section of an https url
// (`d.url` already parsed), read under `key` of `parent` (`what` names it in messages), its context built.
void read_downstreams(config_parse_state& state, const YAML::Node& node, gateway_config& cfg);
void read_tls(config_parse_state& state, const YAML::Node* node, downstream_settings& d, yaml_reader& parent,
              const std::string& key, const std::string& what);

// route_sections.cpp: the `routes` sequence with each route's params and calls; needs cfg.downstreams.
void read_routes(config_parse_state& state, const YAML::Node& node, gateway_config& cfg);

// edge_sections.cpp: a route's `auth` and `rate_limit` (read before its calls: a call may use "{jwt.claim}"),
// once its calls are read, the identity fields checked against its header policies and the claims its
// templates use made required; the top-level `redis`; check_edge after every section (a redis limit
// needs the redis section).
void read_route_edge(config_parse_state& state, yaml_reader& r, route_settings& route);
void finish_route_edge(yaml_reader& r, route_settings& route);
void read_redis(config_parse_state& state, const YAML::Node& node, redis_store_settings& s);
void check_edge(config_parse_state& state, const gateway_config& cfg);

// cross_section_checks.cpp: reported where the later of the two settings is written.
void check_across_sections(config_parse_state& state, const gateway_config& cfg);

}  // namespace gateway
