#include "gateway/sql/sql_downstream.hpp"

#include "gateway/downstream/call_trace.hpp"

#include <algorithm>

namespace gateway {

connection_slots::connection_slots(std::size_t size) : size_(size) {}

std::optional<std::size_t> connection_slots::take_idle() {
  std::lock_guard lock(mutex_);
  if (idle_.empty()) return std::nullopt;
  const auto slot = idle_.back();  // LIFO: the warmest connection
  idle_.pop_back();
  return slot;
}

void connection_slots::put_idle(std::size_t slot) {
  std::lock_guard lock(mutex_);
  idle_.push_back(slot);
}

void connection_slots::put_broken(std::size_t slot) {
  std::lock_guard lock(mutex_);
  broken_.push_back(slot);
}

std::vector<std::size_t> connection_slots::take_broken() {
  std::lock_guard lock(mutex_);
  return std::exchange(broken_, {});
}

void connection_slots::sweep_idle(const std::function<bool(std::size_t)>& healthy) {
  std::lock_guard lock(mutex_);
  std::erase_if(idle_, [&](std::size_t slot) {
    if (healthy(slot)) return false;
    broken_.push_back(slot);
    return true;
  });
}

connection_slots::counts connection_slots::count() const {
  std::lock_guard lock(mutex_);
  return {idle_.size(), size_ - idle_.size() - broken_.size(), broken_.size()};
}

sql_downstream::sql_downstream(const downstream_settings& settings)
    : settings_(settings),
      slots_(settings.sql.pool_size),
      semaphore_(settings.sql.effective_permits(), settings.sql.max_waiting) {
  query_ = &settings_.sql;
}

bool sql_downstream::ready() const {
  const auto counts = pool_counts();
  return counts.idle + counts.in_use > 0;
}

call_result sql_downstream::call(const call_request& request, boost::asio::yield_context yield) {
  const auto started = clock::now();
  auto finish = [&](call_result r) {
    r.latency = clock::now() - started;
    stats_.queries[static_cast<std::size_t>(r.outcome)].fetch_add(1, std::memory_order_relaxed);
    return r;
  };
  auto fail = [&](call_outcome outcome, const char* detail, bool contacted = true) {
    call_result r;
    r.outcome = outcome;
    r.detail = detail;
    r.contacted = contacted;
    return finish(std::move(r));
  };

  std::vector<std::optional<std::string>> values;
  values.reserve(settings_.sql.params.size());
  for (const auto& name : settings_.sql.params) {
    const auto value = bound_value(request, name);
    values.push_back(value ? std::optional<std::string>(*value) : std::nullopt);
  }

  // Traced: how long the permit took (the connection comes with it at once: permits <= pool_size).
  const auto asked = request.trace != nullptr ? clock::now() : clock::time_point{};
  auto acquired = semaphore_.acquire(request.deadline, request.cancel, yield);
  if (request.trace != nullptr) request.trace->permit_waited(clock::now() - asked);
  switch (acquired.outcome) {
    case async_semaphore::status::acquired:
      break;
    case async_semaphore::status::queue_full:
      return fail(call_outcome::rejected, "database queue full", false);
    case async_semaphore::status::timeout:
      return fail(call_outcome::timeout, "waiting for a database permit", false);
    case async_semaphore::status::cancelled:
      return fail(call_outcome::cancelled, "waiting for a database permit", false);
  }
  // A permit holder always finds a connection slot (permits <= pool_size), but it may be broken.
  const auto slot = slots_.take_idle();
  if (!slot) return fail(call_outcome::error, "database unavailable");
  return finish(run_query(*slot, std::move(values), request, std::move(acquired.held), yield));
}

void base64_append(std::string& out, const unsigned char* data, std::size_t size) {
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::size_t i = 0;
  for (; i + 2 < size; i += 3) {
    const unsigned v = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2];
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
    out += alphabet[v & 63];
  }
  if (i < size) {
    const unsigned v = (data[i] << 16) | (i + 1 < size ? data[i + 1] << 8 : 0);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += i + 1 < size ? alphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
}

}  // namespace gateway
