#pragma once
// The connections of a postgres_downstream and the one maintenance thread that does everything about
// them that can block: opening the pool before the gateway serves, cancelling on the server a query a
// call left behind and returning its connection (and the call's permit) once it is clean, finding idle
// connections the server closed, and opening broken ones again with backoff.
//
// Threading: calls take and return connections through `slots` on the I/O threads; the maintenance
// thread owns a connection only while it is broken, being checked idle, or handed over by
// cancel_on_server(). mutex_ guards the hand-over queue and the stop flag.
// Ownership: the pool owns the connections; the downstream owns the pool and outlives it, with the
// settings, slots and stats it lends.

#include "gateway/config/config.hpp"
#include "gateway/runtime/semaphore.hpp"
#include "gateway/sql/postgres_connection.hpp"
#include "gateway/sql/sql_downstream.hpp"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace gateway {

class postgres_pool {
 public:
  // Opens the connections (blocking; stops at the first failure and leaves the rest broken, to be
  // opened in the background) and starts the maintenance thread.
  postgres_pool(const downstream_settings& settings, connection_slots& slots, sql_stats& stats);
  // Stops and joins the maintenance thread; connections handed over and not yet clean are closed.
  ~postgres_pool();
  postgres_pool(const postgres_pool&) = delete;
  postgres_pool& operator=(const postgres_pool&) = delete;

  postgres_connection& connection(std::size_t slot) { return *connections_[slot]; }

  // Hands connection `slot`, on which the server may still be running a query, to the maintenance
  // thread, which cancels the query there, then returns the connection to `slots` (idle, or broken when it
  // does not come clean) and releases `permit`. Any thread; holds the pool's lock only to queue it.
  void cancel_on_server(std::size_t slot, async_semaphore::permit permit);

 private:
  struct cleanup {
    std::size_t slot;
    async_semaphore::permit permit;
  };

  // Maintenance thread.
  void maintain();
  void finish_cleanups(std::vector<cleanup> work);
  void check_idle();
  void reconnect_broken();

  const downstream_settings& settings_;
  connection_slots& slots_;
  sql_stats& stats_;
  std::vector<std::unique_ptr<postgres_connection>> connections_;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;             // guarded by mutex_
  std::vector<cleanup> cleanups_;     // guarded by mutex_
  bool last_connect_failed_ = false;  // the constructor's, then the maintenance thread's
  std::thread maintainer_;
};

}  // namespace gateway
