// libFuzzer target: the request-target rule (core/request_target.hpp) and a pass-through route's rewrite
// of what it admits (router.hpp, forwarded_target).
// Input: the request-target as a client sends it (any bytes).
// Invariants: nothing crashes or leaks; a refusal says why; an admitted target is canonical (the rule
// applied again changes nothing), its path starts with one '/' and holds no '\', no encoded '/', '\' or '.',
// and no segment that is a dot segment in any encoding; a pass-through route it matches gives a
// downstream target under the route's base path and rewrite, with the same guarantees.

#include "gateway/codec/request_target.hpp"
#include "gateway/config/config_loader.hpp"
#include "gateway/server/router.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#ifndef GATEWAY_TARGET_ROUTES
#error "GATEWAY_TARGET_ROUTES must name tests/fuzz/request_target_routes.yaml"
#endif

#include <string>
#include <string_view>

namespace {

const gateway::gateway_config* config = nullptr;  // loaded once, never freed
const gateway::router* routes = nullptr;

void check_clean(std::string_view target) {
  const auto path = gateway::target_path(target);
  FUZZ_CHECK(!path.empty() && path.front() == '/');
  FUZZ_CHECK(path.find('\\') == std::string_view::npos);
  for (std::size_t i = 0; i + 2 < path.size(); ++i) {
    if (path[i] != '%') continue;
    const char a = path[i + 1];
    const char b = static_cast<char>(path[i + 2] | 0x20);
    FUZZ_CHECK(!(a == '2' && (b == 'f' || b == 'e')) && !(a == '5' && b == 'c'));
  }
  std::string_view rest = path.substr(1);
  for (;;) {
    const auto slash = rest.find('/');
    FUZZ_CHECK(!gateway::dot_segment_in_any_encoding(rest.substr(0, slash)));
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  static auto loaded = gateway::load_config_file(GATEWAY_TARGET_ROUTES);
  if (!loaded.config) std::abort();
  config = &*loaded.config;
  routes = new gateway::router(config->routes);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string sent(reinterpret_cast<const char*>(data), size);
  const auto r = gateway::normalize_target(sent);
  if (!r.ok) {
    FUZZ_CHECK(!r.error.empty() && !r.rewritten);
    return 0;
  }
  const std::string target = r.rewritten ? r.target : sent;
  if (target == "*") return 0;
  check_clean(target);
  FUZZ_CHECK(target.size() < 2 || target[1] != '/');  // no "//" that a URL parser would read as a host
  const auto again = gateway::normalize_target(target);
  FUZZ_CHECK(again.ok && !again.rewritten);
  const auto found = routes->find("GET", target);
  if (found.status != 200) return 0;
  const auto& route = config->routes[found.index];
  const auto* proxy = route.proxy();
  FUZZ_CHECK(proxy != nullptr);
  const auto out =
      gateway::forwarded_target(route.pattern, *proxy, config->downstreams[proxy->downstream_index], target);
  const std::string_view base = found.index == 0   ? "/base/blob/"
                                : found.index == 1 ? "/base/item/"
                                                   : "/base/r";
  FUZZ_CHECK(out.rfind(base, 0) == 0);
  check_clean(out);
  return 0;
}
