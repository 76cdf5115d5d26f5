#include "gateway/downstream/answer_cache.hpp"

#include <algorithm>

namespace gateway {

namespace {

// Per entry besides its key and texts: the list node, the map slot, the entry's own fields.
constexpr std::size_t entry_overhead = 160;

}  // namespace

answer_cache::answer_cache(std::size_t max_bytes, clock::duration max_stale, bool serve_fresh)
    : max_bytes_(max_bytes), max_stale_(max_stale), serve_fresh_(serve_fresh) {}

std::size_t answer_cache::size_of(std::string_view key, const json_object_text& body,
                                  std::string_view fields) {
  const auto members = body.members.size() > body.members.static_capacity ? body.members.size() : 0;
  return entry_overhead + key.size() + body.text.size() + members * sizeof(json_member) + fields.size();
}

void answer_cache::put(std::string_view key, const json_object_text& body, clock::time_point now,
                       std::uint32_t fresh_for, std::string_view fields, unsigned status) {
  const auto fresh_until = serve_fresh_ ? now + std::chrono::seconds(fresh_for) : now;
  if (max_stale_.count() == 0 && fresh_until == now) return;  // nothing it would ever serve
  const auto size = size_of(key, body, fields);
  if (size > max_bytes_) return;  // would push out everything else
  std::lock_guard lock(mutex_);
  if (const auto found = by_key_.find(key); found != by_key_.end()) {
    auto& e = *found->second;
    used_ -= e.size;
    e.body = body;
    e.fields.assign(fields);
    e.status = status;
    e.stored = now;
    e.fresh_until = fresh_until;
    e.size = size;
    used_ += size;
    order_.splice(order_.begin(), order_, found->second);
  } else {
    evict_to(max_bytes_ - size);
    order_.push_front(entry{std::string(key), body, std::string(fields), status, now, fresh_until, size});
    by_key_.emplace(order_.front().key, order_.begin());
    used_ += size;
  }
  evict_to(max_bytes_);
  bytes_.store(used_, std::memory_order_relaxed);
  entries_.store(order_.size(), std::memory_order_relaxed);
}

std::optional<json_object_text> answer_cache::get(std::string_view key, clock::time_point now) {
  std::lock_guard lock(mutex_);
  const auto found = by_key_.find(key);
  if (found == by_key_.end() || now - found->second->stored > max_stale_) return std::nullopt;
  order_.splice(order_.begin(), order_, found->second);
  served_.fetch_add(1, std::memory_order_relaxed);
  return found->second->body;
}

std::optional<json_object_text> answer_cache::get_fresh(std::string_view key, clock::time_point now,
                                                        fresh_fields* fields) {
  std::lock_guard lock(mutex_);
  const auto found = by_key_.find(key);
  if (found == by_key_.end() || now >= found->second->fresh_until) return std::nullopt;
  order_.splice(order_.begin(), order_, found->second);
  hits_.fetch_add(1, std::memory_order_relaxed);
  const auto& e = *found->second;
  if (fields != nullptr) {
    fields->text = e.fields;
    fields->status = e.status;
    fields->age =
        static_cast<std::uint32_t>(std::chrono::duration_cast<std::chrono::seconds>(now - e.stored).count());
  }
  return e.body;
}

void answer_cache::evict_to(std::size_t budget) {
  while (used_ > budget && !order_.empty()) {
    auto& last = order_.back();
    used_ -= last.size;
    by_key_.erase(last.key);
    order_.pop_back();
  }
}

}  // namespace gateway
