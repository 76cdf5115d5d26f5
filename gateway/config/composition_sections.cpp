// Composition and shaping of an aggregate route's calls (config.hpp: call_reference, for_each_settings,
// when_condition, call_shaping). A call's keys are read with the call; the graph is checked once every
// call of the route is read, since `after` may name a call listed later:
//   - `after` names calls of the route, never the call itself, and the calls form no cycle;
//   - a "{name.field}" in a path, body_template, header `set` value, `when` or `for_each` names a call in
//     `after` (the longest dotted prefix that is a call's name), or "{item...}" in a for_each call; a name
//     without a dot is a parameter (checked where the templates are read);
//   - a for_each call's answer is a list: other calls may wait for it (`after`) but not use its fields;
//   - group and flatten only in an object response, and not with for_each; keys known on both sides of a
//     flatten (`fields` lists) may not collide.
// Every problem is reported at the key that holds it, with its position.

#include "gateway/codec/safe_name.hpp"
#include "gateway/config/config_sections.hpp"
#include "gateway/config/yaml_reader.hpp"

#include <algorithm>
#include <set>

namespace gateway {

namespace {

// A "{...}" of `when` or `for_each`: the text between the braces, or "" when the value is not one.
std::string braced(const std::string& value) {
  if (value.size() < 3 || value.front() != '{' || value.back() != '}') return {};
  auto inner = value.substr(1, value.size() - 2);
  return inner.find_first_of("{}") == std::string::npos ? inner : std::string();
}

std::size_t call_index(const aggregate_route& route, std::string_view name) {
  for (std::size_t i = 0; i < route.calls.size(); ++i) {
    if (route.calls[i].name == name) return i;
  }
  return route.calls.size();
}

bool declared_param(const aggregate_route& route, std::string_view name) {
  return std::any_of(route.params.begin(), route.params.end(),
                     [&](const param_settings& p) { return p.name == name; });
}

// Resolves `text` (between braces) for `call`: a reference, or nullopt with `error` set (error empty: a
// parameter's name, not a reference).
std::optional<call_reference> resolve(const aggregate_route& route, const call_settings& call,
                                      const std::string& text, std::string& error) {
  error.clear();
  call_reference ref;
  ref.text = text;
  std::string path_text;
  if (text == "item" || text.starts_with("item.")) {
    if (!call.for_each) {
      error = "'{" + text + "}' names the element of a for_each, and this call has no for_each";
      return std::nullopt;
    }
    ref.call = call_reference::item_of_call;
    path_text = text.size() > 4 ? text.substr(5) : std::string();
  } else {
    // The longest dotted prefix that names a call (call names may hold dots themselves).
    std::size_t found = route.calls.size();
    for (auto dot = text.rfind('.'); dot != std::string::npos && dot > 0; dot = text.rfind('.', dot - 1)) {
      found = call_index(route, std::string_view(text).substr(0, dot));
      if (found != route.calls.size()) {
        path_text = text.substr(dot + 1);
        break;
      }
      if (dot == 0) break;
    }
    if (found == route.calls.size()) {
      if (text.find('.') == std::string::npos || declared_param(route, text)) return std::nullopt;
      error = "'{" + text + "}' names no call of this route (a value of an answer is {call.field})";
      return std::nullopt;
    }
    if (found == static_cast<std::size_t>(&call - route.calls.data())) {
      error = "'{" + text + "}' uses the call's own answer";
      return std::nullopt;
    }
    if (std::find(call.after.begin(), call.after.end(), route.calls[found].name) == call.after.end()) {
      error =
          "'{" + text + "}' uses call '" + route.calls[found].name + "', which is not in this call's after";
      return std::nullopt;
    }
    if (route.calls[found].for_each) {
      error = "'{" + text + "}': call '" + route.calls[found].name +
              "' runs for_each (its answer is a list); name it in after only";
      return std::nullopt;
    }
    ref.call = found;
  }
  std::string problem;
  auto path = json_path::parse(path_text, problem);
  if (!path) {
    error = "'{" + text + "}': " + problem;
    return std::nullopt;
  }
  ref.path = std::move(*path);
  return ref;
}

// Adds `ref` to the call's references once (the templates look values up by its text); where it is used
// twice, the stricter rules of both places hold.
void add_reference(call_settings& call, call_reference ref, bool segment, bool short_value) {
  for (auto& r : call.references) {
    if (r.text != ref.text) continue;
    r.segment = r.segment || segment;
    r.short_value = r.short_value || short_value;
    return;
  }
  ref.segment = segment;
  ref.short_value = short_value;
  call.references.push_back(std::move(ref));
}

void report_at(config_parse_state& state, const YAML::Node& node, const char* key,
               const std::string& message) {
  if (node.IsMap() && node[key]) return yaml_reader::report(state.errors, node[key], message);
  yaml_reader::report(state.errors, node, message);
}

// The names of a call's templates (path, body, header values) that are references.
void resolve_templates(config_parse_state& state, const YAML::Node& node, const aggregate_route& route,
                       call_settings& call) {
  std::string error;
  // Parameters were checked where the templates were read.
  const auto use = [&](const std::string& name, const char* key, bool segment, bool short_value) {
    if (!names_reference(route, name)) return;
    if (auto ref = resolve(route, call, name, error))
      return add_reference(call, std::move(*ref), segment, short_value);
    if (!error.empty()) report_at(state, node, key, error);
  };
  bool in_query = false;
  for (const auto& piece : call.path.pieces()) {
    if (!piece.is_param) {
      in_query = in_query || piece.text.find('?') != std::string::npos;
      continue;
    }
    use(piece.text, "path", !in_query, true);
  }
  for (const auto& name : call.built_body.param_names()) use(name, "body_template", false, false);
  // A `set` value with "{...}" takes answers' values in a call that waits for others; elsewhere its
  // braces are text, as they always were.
  if (call.after.empty() && !call.for_each) return;
  auto& set = call.headers.set;
  for (auto it = set.begin(); it != set.end();) {
    if (it->value.find('{') == std::string::npos) {
      ++it;
      continue;
    }
    header_template t;
    t.name = it->name;
    std::string_view rest = it->value;
    bool bad = false;
    while (!rest.empty() && !bad) {
      const auto open = rest.find('{');
      if (open == std::string_view::npos) {
        t.pieces.emplace_back(false, std::string(rest));
        break;
      }
      const auto close = rest.find('}', open);
      if (open > 0) t.pieces.emplace_back(false, std::string(rest.substr(0, open)));
      if (close == std::string_view::npos) {
        report_at(state, node, "headers", "unbalanced '{' in the value of " + t.name);
        bad = true;
        break;
      }
      const std::string name(rest.substr(open + 1, close - open - 1));
      auto ref = resolve(route, call, name, error);
      if (!ref) {
        report_at(state, node, "headers",
                  error.empty() ? "the value of " + t.name + " names '{" + name +
                                      "}': header values take answers' values ({call.field}), not parameters"
                                : error);
        bad = true;
        break;
      }
      t.pieces.emplace_back(true, ref->text);
      add_reference(call, std::move(*ref), false, true);
      rest.remove_prefix(close + 1);
    }
    call.header_templates.push_back(std::move(t));
    it = set.erase(it);
  }
}

// Depth-first from `at`: true when a cycle closes, `stack` then holding the walk, whose last call is the
// one it came back to.
bool find_cycle(const aggregate_route& route, std::size_t at, std::vector<int>& mark,
                std::vector<std::size_t>& stack) {
  mark[at] = 1;
  stack.push_back(at);
  for (const auto next : route.calls[at].after_index) {
    if (mark[next] == 1) {
      stack.push_back(next);
      return true;
    }
    if (mark[next] == 0 && find_cycle(route, next, mark, stack)) return true;
  }
  mark[at] = 2;
  stack.pop_back();
  return false;
}

// The keys a call's entry is known to have (its `fields`, omitted and renamed), or none when any may come.
std::optional<std::set<std::string>> known_keys(const aggregate_route& route, const call_settings& call) {
  if (call.fields.empty()) return std::nullopt;
  std::set<std::string> keys;
  for (auto key : call.fields) {
    const auto omitted = [&](const call_shaping& s) {
      return std::find(s.omit.begin(), s.omit.end(), key) != s.omit.end();
    };
    if (omitted(route.shaping) || omitted(call.shaping)) continue;
    for (const auto* s : {&route.shaping, &call.shaping}) {
      for (const auto& [from, to] : s->rename) {
        if (from == key) {
          key = to;
          break;
        }
      }
    }
    keys.insert(key);
  }
  return keys;
}

void check_shaping(config_parse_state& state, const std::vector<YAML::Node>& nodes, aggregate_route& route) {
  const bool object = route.response == response_shape::object;
  std::set<std::string> entry_keys;  // call names with an entry of their own, and groups
  for (const auto& call : route.calls) {
    if (call.shaping.flatten) continue;
    entry_keys.insert(call.shaping.group.empty() ? call.name : call.shaping.group);
  }
  std::map<std::string, std::string> flat;  // known flattened key -> its call
  for (std::size_t i = 0; i < route.calls.size(); ++i) {
    const auto& call = route.calls[i];
    const auto& s = call.shaping;
    const auto& node = nodes[i];
    for (const char* key : {"group", "flatten"}) {
      const bool used = key[0] == 'g' ? !s.group.empty() : s.flatten;
      if (!used) continue;
      if (!object)
        report_at(state, node, key, std::string(key) + " needs an object response (response: object)");
      if (call.for_each)
        report_at(state, node, key, std::string(key) + " does not go with for_each (its entry is a list)");
    }
    if (!s.group.empty()) {
      if (!valid_name(s.group) || s.group == "source" || s.group == "degraded")
        report_at(state, node, "group",
                  std::string("a group is a key other than source and degraded that ") + name_rule);
      const auto other = call_index(route, s.group);
      if (other != route.calls.size() && other != i && route.calls[other].shaping.group.empty() &&
          !route.calls[other].shaping.flatten)
        report_at(state, node, "group",
                  "group '" + s.group + "' is also the entry of call '" + s.group + "'");
    }
    if (s.flatten && !s.group.empty())
      report_at(state, node, "flatten", "a call has either group or flatten");
    if (!s.flatten) continue;
    const auto keys = known_keys(route, call);
    if (!keys) continue;  // known only at run time: the later call in the route's order wins
    for (const auto& key : *keys) {
      if (entry_keys.contains(key))
        report_at(state, node, "flatten",
                  "flattened field '" + key + "' collides with the entry '" + key + "'");
      const auto [at, fresh] = flat.emplace(key, call.name);
      if (!fresh)
        report_at(state, node, "flatten",
                  "flattened field '" + key + "' collides with the same field of call '" + at->second + "'");
    }
  }
}

}  // namespace

void read_route_shaping(yaml_reader& r, call_shaping& out) {
  if (auto m = r.section("rename")) {
    for (const auto& entry : *m) {
      const auto from = entry.first.as<std::string>("");
      const auto to = entry.second.IsScalar() ? entry.second.as<std::string>("") : std::string();
      if (from.empty() || !valid_name(to) || to == "source" || to == "degraded") {
        r.error_at("rename", "rename maps a field to a new name that " + std::string(name_rule) +
                                 " (not source or degraded)");
        continue;
      }
      out.rename.emplace_back(from, to);
    }
  }
  r.string_list("omit", out.omit);
}

void read_call_composition(yaml_reader& r, call_settings& call) {
  r.string_list("after", call.after);
  std::string source;
  if (r.string("for_each", source)) {
    for_each_settings f;
    f.source.text = braced(source);
    if (f.source.text.empty()) r.error_at("for_each", "for_each takes one '{call.field}' naming an array");
    unsigned n = 32;
    if (r.unsigned_int("max_items", n, 1, 1024)) f.max_items = n;
    n = 8;
    if (r.unsigned_int("concurrency", n, 1, 1024)) f.concurrency = n;
    call.for_each = std::move(f);
  } else {
    for (const char* key : {"max_items", "concurrency"}) {
      if (r.mark_of(key)) r.error_at(key, std::string(key) + " goes with for_each");
    }
  }
  std::string when;
  if (r.string("when", when)) {
    when_condition w;
    w.field.text = braced(when);
    if (w.field.text.empty()) r.error_at("when", "when takes one '{param}' or '{call.field}'");
    call.when = std::move(w);
  }
  read_route_shaping(r, call.shaping);  // a call's rename and omit, as a route's
  std::string target;
  if (r.string("target", target)) {
    std::string problem;
    if (auto p = json_path::parse(target, problem); p && !p->steps.empty()) {
      call.shaping.target = std::move(*p);
    } else {
      r.error_at("target", "target is a path to a nested object, like data.item" +
                               (problem.empty() ? std::string() : ": " + problem));
    }
  }
  r.string("group", call.shaping.group);
  r.boolean("flatten", call.shaping.flatten);
}

bool names_reference(const aggregate_route& route, const std::string& name) {
  if (name == "item" || name.starts_with("item.")) return true;
  return name.find('.') != std::string::npos && !declared_param(route, name);
}

void check_composition(config_parse_state& state, const std::vector<YAML::Node>& nodes,
                       aggregate_route& route) {
  const auto n = route.calls.size();
  for (std::size_t i = 0; i < n; ++i) {
    auto& call = route.calls[i];
    const auto& node = nodes[i];
    std::set<std::string> seen;
    for (const auto& name : call.after) {
      const auto at = call_index(route, name);
      if (at == n) {
        report_at(state, node, "after", "after names unknown call '" + name + "'");
      } else if (at == i) {
        report_at(state, node, "after", "call '" + name + "' names itself in after");
      } else if (seen.insert(name).second) {
        call.after_index.push_back(at);
        route.calls[at].has_dependents = true;
      }
    }
  }
  // Cycles: reported once, at the `after` of the call where the walk closed it.
  std::vector<int> mark(n, 0);
  bool cyclic = false;
  for (std::size_t i = 0; i < n && !cyclic; ++i) {
    std::vector<std::size_t> stack;
    if (mark[i] != 0 || !find_cycle(route, i, mark, stack)) continue;
    cyclic = true;
    const auto closing = stack.back();
    std::string text;
    for (auto at = std::find(stack.begin(), stack.end(), closing); at != stack.end(); ++at)
      text += (text.empty() ? "" : " -> ") + route.calls[*at].name;
    report_at(state, nodes[stack[stack.size() - 2]], "after", "calls form a cycle: " + text);
  }
  std::string error;
  for (std::size_t i = 0; i < n; ++i) {
    auto& call = route.calls[i];
    const auto& node = nodes[i];
    if (call.for_each) {
      auto text = call.for_each->source.text;
      if (!text.empty()) {
        auto ref = resolve(route, call, text, error);
        if (ref && ref->call == call_reference::item_of_call) {
          report_at(state, node, "for_each", "for_each names an earlier answer's array, not {item}");
        } else if (ref) {
          call.for_each->source = std::move(*ref);
        } else {
          report_at(state, node, "for_each",
                    error.empty() ? "for_each takes '{call.field}' (an array of an answer), not a parameter"
                                  : error);
        }
      }
    }
    if (call.when && !call.when->field.text.empty()) {
      const auto text = call.when->field.text;
      if (auto ref = resolve(route, call, text, error)) {
        call.when->field = std::move(*ref);
      } else if (!error.empty()) {
        report_at(state, node, "when", error);
      } else if (declared_param(route, text)) {
        call.when->on_param = true;
        call.when->param =
            static_cast<std::size_t>(std::find_if(route.params.begin(), route.params.end(),
                                                  [&](const param_settings& p) { return p.name == text; }) -
                                     route.params.begin());
      } else {
        report_at(state, node, "when", "when names undeclared parameter '" + text + "'");
      }
    }
    resolve_templates(state, node, route, call);
    if (!call.fallback_members.empty())
      parse_json_object("{" + call.fallback_members + "}", call.fallback_object);
    if (!call.after.empty() || call.for_each || call.when) route.graph = true;
    if (!call.shaping.empty() || call.for_each || call.when) route.shaped = true;
  }
  if (!route.shaping.empty()) route.shaped = true;
  check_shaping(state, nodes, route);
  route.slots = n;
  route.slot_owner.resize(n);
  for (std::size_t i = 0; i < n; ++i) route.slot_owner[i] = i;
  for (std::size_t i = 0; i < n; ++i) {
    auto& call = route.calls[i];
    if (!call.for_each) continue;
    call.for_each->first_slot = route.slots;
    route.slots += call.for_each->max_items;
    route.slot_owner.resize(route.slots, i);
  }
}

}  // namespace gateway
