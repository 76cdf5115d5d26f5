#pragma once
// A downstream's last good answers, keyed by what was asked (an HTTP call's expanded target; a SQL
// call's parameter values): put() keeps a copy of each good answer; get() hands back the last one for
// the key while it is younger than max_stale, to serve instead of the static fallback when a call fails
// (stale_if_error); get_fresh() while the downstream's Cache-Control allows serving it without a call
// (cache). Bounded in bytes (keys, texts and member tables counted): the least recently used
// answers go first. Shared by every I/O thread behind one mutex, held for a lookup or an insert and never
// across I/O or a callback; a downstream without stale_if_error has none.

#include "gateway/codec/json_object.hpp"
#include "gateway/runtime/duration.hpp"

#include <atomic>
#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace gateway {

class answer_cache {
 public:
  // `serve_fresh`: answers are also served without a call while their Cache-Control allows.
  answer_cache(std::size_t max_bytes, clock::duration max_stale, bool serve_fresh = false);

  // Keeps `body` for `key`: fresh (served instead of a call) for `fresh_for` seconds when this cache serves
  // fresh answers, and stale (served when a call fails) until max_stale after `now`. `fields`: answer
  // fields kept with it for the client (call_result::headers), handed back with a fresh answer only, as
  // is `status`, the answer's (0: none, a SQL row).
  void put(std::string_view key, const json_object_text& body, clock::time_point now, std::uint32_t fresh_for,
           std::string_view fields = {}, unsigned status = 0);
  // A copy of the last good answer for `key`, if one younger than max_stale is kept.
  std::optional<json_object_text> get(std::string_view key, clock::time_point now);
  // A copy of the answer for `key` if it is still fresh; with `fields`, also its fields and its age.
  struct fresh_fields {
    std::string text;
    std::uint32_t age = 0;  // whole seconds since it was stored
    unsigned status = 0;    // the stored answer's
  };
  std::optional<json_object_text> get_fresh(std::string_view key, clock::time_point now,
                                            fresh_fields* fields = nullptr);
  std::uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }

  std::size_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  std::size_t entries() const { return entries_.load(std::memory_order_relaxed); }
  std::uint64_t served() const { return served_.load(std::memory_order_relaxed); }

 private:
  struct entry {
    std::string key;
    json_object_text body;
    std::string fields;
    unsigned status = 0;
    clock::time_point stored;
    clock::time_point fresh_until;
    std::size_t size = 0;
  };
  static std::size_t size_of(std::string_view key, const json_object_text& body, std::string_view fields);
  void evict_to(std::size_t budget);  // under the lock

  const std::size_t max_bytes_;
  const clock::duration max_stale_;
  const bool serve_fresh_;
  std::mutex mutex_;                                                         // guards what follows
  std::list<entry> order_;                                                   // most recently used first
  std::unordered_map<std::string_view, std::list<entry>::iterator> by_key_;  // keys point into order_
  std::size_t used_ = 0;
  std::atomic<std::size_t> bytes_{0};
  std::atomic<std::size_t> entries_{0};
  std::atomic<std::uint64_t> served_{0};
  std::atomic<std::uint64_t> hits_{0};
};

}  // namespace gateway
