#pragma once
// The shared part of SQL downstreams: a call binds the route's parameters to the query's names, waits
// for a permit of the semaphore in front of the pool (bounded by the call's deadline, its cancellation
// and max_waiting), then lets the driver run the query on a pooled connection. The first row becomes
// the entry: column names are the keys, SQL types map to JSON types; no row is a failure.

#include "gateway/config/config.hpp"
#include "gateway/downstream/downstream.hpp"
#include "gateway/runtime/semaphore.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace gateway {

// Which connections of a fixed-size pool are idle and usable, lent out, or broken (awaiting a
// reconnect). Thread-safe; a connection is identified by its index.
class connection_slots {
 public:
  explicit connection_slots(std::size_t size);

  std::optional<std::size_t> take_idle();
  void put_idle(std::size_t slot);
  void put_broken(std::size_t slot);
  std::vector<std::size_t> take_broken();
  // Keeps the idle connections for which `healthy(slot)` holds and marks the others broken; runs under
  // the pool's lock, so `healthy` must not wait.
  void sweep_idle(const std::function<bool(std::size_t)>& healthy);

  struct counts {
    std::size_t idle = 0, in_use = 0, broken = 0;
  };
  counts count() const;

 private:
  mutable std::mutex mutex_;
  std::size_t size_;
  std::vector<std::size_t> idle_;
  std::vector<std::size_t> broken_;
};

// Counters for metrics; relaxed atomics, read at scrape.
struct sql_stats {
  std::array<std::atomic<std::uint64_t>, 5> queries{};  // by call_outcome
  std::atomic<std::uint64_t> server_cancels{0};         // queries cancelled or interrupted at the deadline
  std::atomic<std::uint64_t> reconnects{0};             // connections (re)opened after start-up
};

class sql_downstream : public downstream {
 public:
  sql_downstream(const downstream_settings& settings);

  call_result call(const call_request& request, boost::asio::yield_context yield) final;
  void close_idle(std::size_t) override {}
  bool ready() const override;

  const std::string& name() const { return settings_.name; }
  const async_semaphore& semaphore() const { return semaphore_; }
  const sql_stats& stats() const { return stats_; }
  connection_slots::counts pool_counts() const { return slots_.count(); }

 protected:
  // Runs the query on pooled connection `slot` with `values` bound (nullopt = NULL), holding `permit`.
  // The driver returns the slot to slots_ (idle or broken). It may keep the permit after returning, while
  // the server finishes with a cancelled query, so that the permits bound the work the database really
  // does.
  virtual call_result run_query(std::size_t slot, std::vector<std::optional<std::string>> values,
                                const call_request& request, async_semaphore::permit permit,
                                boost::asio::yield_context yield) = 0;

  const downstream_settings settings_;
  sql_stats stats_;
  connection_slots slots_;

 private:
  async_semaphore semaphore_;
};

// Appends the base64 form of a binary value (BLOB, bytea) for a JSON string.
void base64_append(std::string& out, const unsigned char* data, std::size_t size);

}  // namespace gateway
