#include "loadtest/mock/path_registry.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace mock {

namespace {
constexpr auto relaxed = std::memory_order_relaxed;
constexpr std::string_view untracked_seed_name = "/";  // not a valid path name: no path shares its seed

const std::string& text_of(const std::string& text) {
  return text;
}
const std::string& text_of(const body_template& body) {
  return body.text();
}

// A ticket may point to a text while the path changes again: texts are kept, each once, `bytes` counting
// them. `make(text, error)` returns the object kept for a new text (nullopt with `error`). Null for "".
template <class T, class Make>
const T* keep_once(std::vector<std::unique_ptr<const T>>& kept, const std::string& text, std::size_t& bytes,
                   std::string& error, Make make) {
  if (text.empty()) return nullptr;
  for (const auto& k : kept) {
    if (text_of(*k) == text) return k.get();
  }
  if (bytes + text.size() > path_registry::max_body_bytes) {
    error = "too many bodies (64 MiB in all)";
    return nullptr;
  }
  std::optional<T> made = make(text, error);
  if (!made) return nullptr;
  bytes += text.size();
  return kept.emplace_back(std::make_unique<const T>(std::move(*made))).get();
}

std::optional<body_template> parse_body(const std::string& json, std::string& error) {
  auto body = body_template::parse(json, error);
  if (!body) error = "body " + error;
  return body;
}

std::optional<std::string> copy_text(const std::string& text, std::string&) {
  return text;
}

}  // namespace

path_registry::path_registry(latency default_delay, std::vector<unsigned short> ports, std::uint64_t seed)
    : default_delay_(default_delay),
      seed_(seed),
      endpoints_(std::max<std::size_t>(ports.size(), 1)),
      default_draws_(path_seed(seed, untracked_seed_name)) {
  for (std::size_t i = 0; i < ports.size(); ++i) endpoints_[i].port = ports[i];
}

path_registry::path_entry* path_registry::find_or_add(path_table& table, std::string_view key,
                                                      std::string_view seed_name) {
  if (auto it = table.find(key); it != table.end()) return it->second.get();
  if (table.size() >= max_paths) return nullptr;
  auto entry = std::make_unique<path_entry>();
  entry->draws = draw_generator(path_seed(seed_, seed_name));
  entry->by_endpoint.resize(endpoints_.size());
  return table.emplace(std::string(key), std::move(entry)).first->second.get();
}

path_registry::path_entry* path_registry::longest_prefix(std::string_view name) {
  // A prefix covers the paths that go on after its '/': "seller/" covers "seller/17", not "seller/".
  if (name.size() < 2) return nullptr;
  for (auto slash = name.rfind('/', name.size() - 2); slash != std::string_view::npos;
       slash = slash == 0 ? std::string_view::npos : name.rfind('/', slash - 1)) {
    if (auto it = prefixes_.find(name.substr(0, slash + 1)); it != prefixes_.end()) return it->second.get();
  }
  return nullptr;
}

std::string path_registry::configure(std::string_view name, const path_change& change, unsigned short port) {
  std::size_t endpoint = 0;
  if (port != 0) {
    while (endpoint < endpoints_.size() && endpoints_[endpoint].port != port) ++endpoint;
    if (endpoint == endpoints_.size()) {
      std::string error = "no endpoint listens on port ";
      error += std::to_string(port);
      return error;
    }
  }
  std::lock_guard lock(mutex_);
  std::string error;
  const body_template* body =
      change.body ? keep_once(bodies_, *change.body, body_bytes_, error, parse_body) : nullptr;
  const std::string* headers = change.headers && error.empty()
                                   ? keep_once(texts_, *change.headers, body_bytes_, error, copy_text)
                                   : nullptr;
  if (!error.empty()) return error;
  const auto prefix = setting_prefix(name);
  path_entry* entry = prefix.empty() ? find_or_add(paths_, name, name) : find_or_add(prefixes_, prefix, name);
  if (!entry) return "too many paths";
  entry->configured = true;
  const auto apply = [&](path_config& config) {
    if (change.how) config.how = *change.how;
    if (change.delay) config.delay = change.delay;
    if (change.body) config.body = body;
    if (change.headers) config.headers = headers;
  };
  if (port != 0) {
    entry->overrides.resize(endpoints_.size());
    auto& over = entry->overrides[endpoint];
    if (!over) over = entry->shared;
    apply(*over);
    return {};
  }
  apply(entry->shared);
  for (auto& over : entry->overrides) {
    if (over) apply(*over);
  }
  return {};
}

microseconds path_registry::draw_delay(const std::optional<latency>& delay, draw_generator& draws) const {
  const latency& chosen = delay ? *delay : default_delay_;
  return chosen.has_tail() ? chosen.pick(draws.next_draw()) : chosen.base;
}

path_registry::ticket path_registry::begin_request(std::string_view name, const request_headers& headers,
                                                   std::size_t endpoint) {
  requests_.fetch_add(1, relaxed);
  ticket t;
  t.endpoint = endpoint < endpoints_.size() ? endpoint : 0;
  std::lock_guard lock(mutex_);
  ++endpoints_[t.endpoint].total.requests;
  t.entry = find_or_add(paths_, name, name);
  // Without prefixes (the common case) a path answers by its own settings at no further cost.
  path_entry* prefix = nullptr;
  if (!prefixes_.empty() && (!t.entry || !t.entry->configured)) prefix = longest_prefix(name);
  if (!t.entry && !prefix) {
    t.how.delay = draw_delay(std::nullopt, default_draws_);
    return t;
  }
  const path_config& config = (prefix ? prefix : t.entry)->config(t.endpoint);
  t.how.how = config.how;
  // A tracked path draws from its own generator even under a prefix: its delays do not depend on the
  // order in which its siblings are requested.
  t.how.delay = draw_delay(config.delay, (t.entry ? t.entry : prefix)->draws);
  t.body = config.body;
  t.headers = config.headers;
  if (!t.entry) {  // the table is full: the prefix's own count decides a flaky answer
    ++prefix->total.requests;
    if (t.how.how == mode::flaky) t.how.how = prefix->total.requests % 2 == 1 ? mode::unavailable : mode::ok;
    return t;
  }
  ++t.entry->total.requests;
  ++t.entry->by_endpoint[t.endpoint].requests;
  if (t.how.how == mode::flaky) t.how.how = t.entry->total.requests % 2 == 1 ? mode::unavailable : mode::ok;
  t.entry->last_timeout_ms.assign(headers.timeout_ms);
  t.entry->last_request_id.assign(headers.request_id);
  t.entry->last_traceparent.assign(headers.traceparent);
  if (!headers.traceparent.empty()) {
    auto& ring = t.entry->traceparents;
    ring[t.entry->traceparents_seen++ % ring.size()].assign(headers.traceparent);
  }
  if (!recorded_names_.empty()) t.entry->last_headers = headers.recorded;
  t.entry->last_accept_encoding.assign(headers.accept_encoding);
  return t;
}

void path_registry::count_cancelled(const ticket& t) {
  cancelled_.fetch_add(1, relaxed);
  std::lock_guard lock(mutex_);
  ++endpoints_[t.endpoint].total.cancelled;
  if (!t.entry) return;
  ++t.entry->total.cancelled;
  ++t.entry->by_endpoint[t.endpoint].cancelled;
}

void path_registry::connection_opened(std::size_t endpoint) {
  connections_open_.fetch_add(1, relaxed);
  connections_total_.fetch_add(1, relaxed);
  auto& e = endpoints_[endpoint < endpoints_.size() ? endpoint : 0];
  e.connections_open.fetch_add(1, relaxed);
  e.connections_total.fetch_add(1, relaxed);
}

void path_registry::connection_closed(std::size_t endpoint) {
  connections_open_.fetch_sub(1, relaxed);
  endpoints_[endpoint < endpoints_.size() ? endpoint : 0].connections_open.fetch_sub(1, relaxed);
}

void path_registry::count_tls_handshake(bool resumed) {
  tls_handshakes_.fetch_add(1, relaxed);
  if (resumed) tls_resumed_.fetch_add(1, relaxed);
}

void path_registry::reset() {
  std::lock_guard lock(mutex_);
  requests_.store(0, relaxed);
  cancelled_.store(0, relaxed);
  connections_total_.store(0, relaxed);
  tls_handshakes_.store(0, relaxed);
  tls_resumed_.store(0, relaxed);
  for (auto& e : endpoints_) {
    e.total = {};
    e.connections_total.store(0, relaxed);
  }
  default_draws_ = draw_generator(path_seed(seed_, untracked_seed_name));
  for (auto& [prefix, entry] : prefixes_) {
    entry->draws = draw_generator(path_seed(seed_, std::string(prefix) + '*'));
    entry->total = {};
  }
  for (auto& [name, entry] : paths_) {
    entry->draws = draw_generator(path_seed(seed_, name));
    entry->total = {};
    for (auto& c : entry->by_endpoint) c = {};
    entry->last_timeout_ms.clear();
    entry->last_request_id.clear();
    entry->last_traceparent.clear();
    entry->traceparents_seen = 0;
    entry->last_headers.clear();
    entry->last_accept_encoding.clear();
  }
}

std::string path_registry::stats_json() const {
  nlohmann::json paths = nlohmann::json::object();
  nlohmann::json endpoints = nlohmann::json::object();
  {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < endpoints_.size(); ++i) {
      const auto& e = endpoints_[i];
      nlohmann::json seen = nlohmann::json::object();
      for (const auto& [name, entry] : paths_) {
        const auto& c = entry->by_endpoint[i];
        if (c.requests != 0 || c.cancelled != 0)
          seen[name] = {{"requests", c.requests}, {"cancelled", c.cancelled}};
      }
      endpoints[std::to_string(e.port)] = {{"requests", e.total.requests},
                                           {"cancelled", e.total.cancelled},
                                           {"connections_open", e.connections_open.load(relaxed)},
                                           {"connections_total", e.connections_total.load(relaxed)},
                                           {"paths", std::move(seen)}};
    }
    for (const auto& [name, entry] : paths_) {
      paths[name] = {{"requests", entry->total.requests},
                     {"cancelled", entry->total.cancelled},
                     {"last_request_timeout_ms", entry->last_timeout_ms},
                     {"last_request_id", entry->last_request_id},
                     {"last_traceparent", entry->last_traceparent},
                     {"traceparents", nlohmann::json::array()},
                     {"last_accept_encoding", entry->last_accept_encoding}};
      const auto& ring = entry->traceparents;
      const auto came = entry->traceparents_seen;
      for (auto i = came > ring.size() ? came - ring.size() : 0; i < came; ++i)
        paths[name]["traceparents"].push_back(ring[i % ring.size()]);
      if (!recorded_names_.empty()) {
        auto& seen = paths[name]["last_headers"] = nlohmann::json::object();
        for (const auto& [field, value] : entry->last_headers) seen[field] = value;
      }
    }
  }
  // "endpoints" sorts before "requests": the top-level requests counter stays the last one in the text,
  // where loadtest/bench.sh looks for it.
  nlohmann::json out = {
      {"requests", requests_.load(relaxed)},
      {"cancelled", cancelled_.load(relaxed)},
      {"connections_open", connections_open_.load(relaxed)},
      {"connections_total", connections_total_.load(relaxed)},
      {"endpoints", std::move(endpoints)},
      {"handshakes", {{"tls", tls_handshakes_.load(relaxed)}, {"resumed", tls_resumed_.load(relaxed)}}},
      {"paths", std::move(paths)}};
  // Header values are client bytes: replace invalid UTF-8 instead of throwing.
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace mock
