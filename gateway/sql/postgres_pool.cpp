#include "gateway/sql/postgres_pool.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <string>

namespace gateway {

namespace {

constexpr auto check_interval = std::chrono::milliseconds(500);
constexpr auto max_backoff = std::chrono::seconds(5);
constexpr auto drain_timeout = std::chrono::seconds(5);

}  // namespace

postgres_pool::postgres_pool(const downstream_settings& settings, connection_slots& slots, sql_stats& stats)
    : settings_(settings), slots_(slots), stats_(stats) {
  const auto& sql = settings.sql;
  std::size_t opened = 0;
  for (std::size_t i = 0; i < sql.pool_size; ++i) {
    connections_.push_back(std::make_unique<postgres_connection>());
    std::string error;
    if (!last_connect_failed_ &&
        connections_.back()->open(sql, clock::now() + settings.connect_timeout, error)) {
      slots_.put_idle(i);
      ++opened;
    } else {
      if (!last_connect_failed_)
        spdlog::warn("sql downstream '{}': cannot connect yet ({}); retrying in the background",
                     settings.name, error);
      last_connect_failed_ = true;
      slots_.put_broken(i);
    }
  }
  spdlog::info("sql downstream '{}': postgres pool {}/{} connections open, {} permits", settings.name, opened,
               sql.pool_size, sql.effective_permits());
  maintainer_ = std::thread([this] { maintain(); });
}

postgres_pool::~postgres_pool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  maintainer_.join();
}

void postgres_pool::cancel_on_server(std::size_t slot, async_semaphore::permit permit) {
  stats_.server_cancels.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(mutex_);
    cleanups_.push_back({slot, std::move(permit)});
  }
  wake_.notify_one();
}

void postgres_pool::maintain() {
  auto next_check = clock::now() + check_interval;
  auto backoff = std::chrono::milliseconds(check_interval);
  for (;;) {
    std::vector<cleanup> work;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_until(lock, next_check, [&] { return stopping_ || !cleanups_.empty(); });
      if (stopping_) {
        for (auto& w : cleanups_) connections_[w.slot]->close();
        cleanups_.clear();
        return;
      }
      work.swap(cleanups_);
    }
    if (!work.empty()) finish_cleanups(std::move(work));
    if (clock::now() < next_check) continue;
    check_idle();
    reconnect_broken();
    backoff = last_connect_failed_ ? std::min<std::chrono::milliseconds>(backoff * 2, max_backoff)
                                   : std::chrono::milliseconds(check_interval);
    next_check = clock::now() + backoff;
  }
}

void postgres_pool::finish_cleanups(std::vector<cleanup> work) {
  for (auto& w : work) {
    std::string error;
    if (!connections_[w.slot]->cancel_query(error))
      spdlog::debug("sql downstream '{}': cancel request failed: {}", settings_.name, error);
  }
  const auto deadline = clock::now() + drain_timeout;
  for (auto& w : work) {
    auto& c = *connections_[w.slot];
    std::string ignored;  // "canceling statement due to user request"
    if (c.drain(deadline, ignored)) {
      slots_.put_idle(w.slot);
    } else {
      c.close();
      slots_.put_broken(w.slot);
    }
    w.permit.release();
  }
}

void postgres_pool::check_idle() {
  // A connection the server closed while idle (restart, idle timeout, admin kill) is found here rather
  // than by a caller. Each check is a poll with no wait.
  slots_.sweep_idle([this](std::size_t slot) {
    auto& c = *connections_[slot];
    const bool ok = c.idle_and_healthy();
    if (!ok) c.close();
    return ok;
  });
}

void postgres_pool::reconnect_broken() {
  auto broken = slots_.take_broken();
  std::size_t i = 0;
  for (; i < broken.size(); ++i) {
    std::string error;
    if (!connections_[broken[i]]->open(settings_.sql, clock::now() + settings_.connect_timeout, error)) {
      if (!last_connect_failed_)
        spdlog::warn("sql downstream '{}': cannot connect: {}", settings_.name, error);
      last_connect_failed_ = true;
      break;
    }
    if (last_connect_failed_) spdlog::info("sql downstream '{}': connected again", settings_.name);
    last_connect_failed_ = false;
    stats_.reconnects.fetch_add(1, std::memory_order_relaxed);
    slots_.put_idle(broken[i]);
  }
  for (; i < broken.size(); ++i) slots_.put_broken(broken[i]);
}

}  // namespace gateway
