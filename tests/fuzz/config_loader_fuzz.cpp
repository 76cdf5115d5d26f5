// libFuzzer target: gateway::load_config_text on arbitrary text.
// Invariants: it never crashes, throws or aborts; a failure is reported as config_error values, each with
// a message and a position in the text; a configuration is returned exactly when there is no error, and
// what it returns holds together: every call names an existing downstream and only declared parameters,
// a pass-through route names an existing HTTP downstream and has no calls,
// and the effective configuration prints as JSON (the gateway prints it when it starts).

#include "gateway/config/config_json.hpp"
#include "gateway/config/config_loader.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <algorithm>
#include <string>
#include <string_view>

namespace {

void check_config(const gateway::gateway_config& cfg) {
  FUZZ_CHECK(!cfg.routes.empty());
  FUZZ_CHECK(cfg.source == "fuzz.yaml");
  for (const auto& route : cfg.routes) {
    FUZZ_CHECK(route.path.starts_with('/'));
    // A pass-through route names an HTTP downstream; an aggregate route has calls.
    if (const auto* proxy = route.proxy()) {
      FUZZ_CHECK(proxy->downstream_index < cfg.downstreams.size());
      FUZZ_CHECK(cfg.downstreams[proxy->downstream_index].name == proxy->downstream);
      FUZZ_CHECK(cfg.downstreams[proxy->downstream_index].kind == gateway::downstream_kind::http);
      continue;
    }
    const auto& aggregate = *route.aggregate();
    FUZZ_CHECK(!aggregate.calls.empty());
    for (const auto& call : aggregate.calls) {
      FUZZ_CHECK(call.downstream_index < cfg.downstreams.size());
      FUZZ_CHECK(cfg.downstreams[call.downstream_index].name == call.downstream);
      // A template's name is a declared parameter, or a value of an answer the call waits for.
      for (const auto& name : call.path.param_names()) {
        FUZZ_CHECK(std::any_of(aggregate.params.begin(), aggregate.params.end(),
                               [&](const gateway::param_settings& p) { return p.name == name; }) ||
                   std::any_of(call.references.begin(), call.references.end(),
                               [&](const gateway::call_reference& r) { return r.text == name; }));
      }
      const auto self = static_cast<std::size_t>(&call - aggregate.calls.data());
      for (const auto& ref : call.references) {
        if (ref.call == gateway::call_reference::item_of_call) {
          FUZZ_CHECK(call.for_each.has_value());
          continue;
        }
        FUZZ_CHECK(std::find(call.after_index.begin(), call.after_index.end(), ref.call) !=
                   call.after_index.end());
      }
      for (const auto d : call.after_index) FUZZ_CHECK(d < aggregate.calls.size() && d != self);
      if (call.for_each) {
        FUZZ_CHECK(call.for_each->first_slot + call.for_each->max_items <= aggregate.slots);
        for (std::size_t s = 0; s < call.for_each->max_items; ++s)
          FUZZ_CHECK(aggregate.slot_owner[call.for_each->first_slot + s] == self);
      }
    }
    // The calls form no cycle: an order in which each call comes after those it waits for exists.
    std::vector<bool> placed(aggregate.calls.size(), false);
    for (std::size_t round = 0; round < aggregate.calls.size(); ++round) {
      for (std::size_t i = 0; i < aggregate.calls.size(); ++i) {
        const auto& after = aggregate.calls[i].after_index;
        if (!placed[i] && std::all_of(after.begin(), after.end(), [&](std::size_t d) { return placed[d]; }))
          placed[i] = true;
      }
    }
    FUZZ_CHECK(std::all_of(placed.begin(), placed.end(), [](bool b) { return b; }));
  }
  std::string printed;
  try {
    printed = gateway::effective_config_json(cfg).dump(2);
  } catch (const std::exception& e) {
    fuzz::fail((std::string("an accepted configuration does not print: ") + e.what()).c_str());
  }
  FUZZ_CHECK(!printed.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  gateway::config_load_result result;
  try {
    result = gateway::load_config_text(text, "fuzz.yaml");
  } catch (const std::exception& e) {
    fuzz::fail((std::string("load_config_text threw: ") + e.what()).c_str());
  }
  FUZZ_CHECK(result.config.has_value() == result.errors.empty());
  for (const auto& e : result.errors) {
    FUZZ_CHECK(!e.message.empty());
    FUZZ_CHECK(e.line >= 1 && e.column >= 1);
  }
  if (result.config) check_config(*result.config);
  return 0;
}
