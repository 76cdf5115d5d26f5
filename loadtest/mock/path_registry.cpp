#include "loadtest/mock/path_registry.hpp"

#include <nlohmann/json.hpp>

namespace mock {

namespace {
constexpr auto relaxed = std::memory_order_relaxed;
}

path_registry::path_entry* path_registry::find_or_add(std::string_view name) {
  if (auto it = paths_.find(name); it != paths_.end()) return it->second.get();
  if (paths_.size() >= max_paths) return nullptr;
  return paths_.emplace(std::string(name), std::make_unique<path_entry>()).first->second.get();
}

bool path_registry::configure(std::string_view name, mode how, std::optional<microseconds> delay) {
  std::lock_guard lock(mutex_);
  path_entry* entry = find_or_add(name);
  if (!entry) return false;
  entry->how = how;
  if (delay) entry->delay = delay;
  return true;
}

path_registry::ticket path_registry::begin_request(std::string_view name, const request_headers& headers) {
  requests_.fetch_add(1, relaxed);
  ticket t;
  t.how.delay = default_delay_;
  std::lock_guard lock(mutex_);
  t.entry = find_or_add(name);
  if (t.entry) {
    t.how.how = t.entry->how;
    t.how.delay = t.entry->delay.value_or(default_delay_);
    ++t.entry->requests;
    t.entry->last_timeout_ms.assign(headers.timeout_ms);
    t.entry->last_request_id.assign(headers.request_id);
    t.entry->last_traceparent.assign(headers.traceparent);
  }
  return t;
}

void path_registry::count_cancelled(const ticket& t) {
  cancelled_.fetch_add(1, relaxed);
  if (!t.entry) return;
  std::lock_guard lock(mutex_);
  ++t.entry->cancelled;
}

void path_registry::connection_opened() {
  connections_open_.fetch_add(1, relaxed);
  connections_total_.fetch_add(1, relaxed);
}

void path_registry::connection_closed() {
  connections_open_.fetch_sub(1, relaxed);
}

void path_registry::reset() {
  std::lock_guard lock(mutex_);
  requests_.store(0, relaxed);
  cancelled_.store(0, relaxed);
  connections_total_.store(0, relaxed);
  for (auto& [name, entry] : paths_) {
    entry->requests = 0;
    entry->cancelled = 0;
    entry->last_timeout_ms.clear();
    entry->last_request_id.clear();
    entry->last_traceparent.clear();
  }
}

std::string path_registry::stats_json() const {
  nlohmann::json paths = nlohmann::json::object();
  {
    std::lock_guard lock(mutex_);
    for (const auto& [name, entry] : paths_) {
      paths[name] = {{"requests", entry->requests},
                     {"cancelled", entry->cancelled},
                     {"last_request_timeout_ms", entry->last_timeout_ms},
                     {"last_request_id", entry->last_request_id},
                     {"last_traceparent", entry->last_traceparent}};
    }
  }
  nlohmann::json out = {{"requests", requests_.load(relaxed)},
                        {"cancelled", cancelled_.load(relaxed)},
                        {"connections_open", connections_open_.load(relaxed)},
                        {"connections_total", connections_total_.load(relaxed)},
                        {"paths", std::move(paths)}};
  // Header values are client bytes: replace invalid UTF-8 instead of throwing.
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace mock
