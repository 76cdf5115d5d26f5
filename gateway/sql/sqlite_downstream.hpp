#pragma once
// The embedded SQLite branch. SQLite is a blocking library, so every call into it runs on a dedicated
// thread pool (one thread per pooled connection), never on an I/O thread; the result is posted back to
// the waiting coroutine. At the call's deadline the running statement is interrupted
// (sqlite3_interrupt) and the coroutine returns at once; the connection and the permit come back when
// the interrupted statement has unwound. A read-only database is opened immutable (no locks, no journal);
// a writable one is switched to WAL mode. Connections have a deadline-aware busy handler and the query
// prepared once per connection.

#include "gateway/sql/sql_downstream.hpp"

#include <atomic>
#include <memory>
#include <vector>

namespace boost::asio {
class thread_pool;
}

namespace gateway {

class sqlite_downstream final : public sql_downstream {
 public:
  // Opens every connection and prepares the query; throws std::runtime_error (file missing, query
  // invalid) so that a broken configuration stops the start.
  explicit sqlite_downstream(const downstream_settings& settings);
  ~sqlite_downstream() override;

 protected:
  call_result run_query(std::size_t slot, std::vector<std::optional<std::string>> values,
                        const call_request& request, async_semaphore::permit permit,
                        boost::asio::yield_context yield) override;

 private:
  struct connection;
  struct job;
  void execute(const std::shared_ptr<job>& j);
  void interrupt(job& j);

  std::vector<std::unique_ptr<connection>> connections_;
  std::unique_ptr<boost::asio::thread_pool> threads_;
  std::atomic<std::uint64_t> next_job_{1};
};

}  // namespace gateway
