#pragma once
// The PostgreSQL branch through libpq. Queries run on the I/O threads in non-blocking mode: the
// coroutine waits on the connection's socket, no thread blocks. Everything that can block (connecting,
// which may resolve a host name; PQcancel; draining a cancelled query; checking idle connections) runs
// on one maintenance thread per downstream.
// At the call's deadline the coroutine returns at once; the connection, still holding its permit, goes
// to the maintenance thread, which cancels the query on the server and returns the connection to the
// pool only once it is clean again (or closes it). A query still sending rows after its first one, the
// only one a call uses, goes the same way once that row is in: the rest is cancelled, not read. Broken
// connections are replaced in the background with backoff; the pool is filled before the gateway starts
// serving when the server is up.

#include "gateway/sql/sql_downstream.hpp"

#include <condition_variable>
#include <memory>
#include <thread>
#include <vector>

namespace gateway {

class postgres_downstream final : public sql_downstream {
 public:
  explicit postgres_downstream(const downstream_settings& settings);
  ~postgres_downstream() override;

 protected:
  call_result run_query(std::size_t slot, std::vector<std::optional<std::string>> values,
                        const call_request& request, async_semaphore::permit permit,
                        boost::asio::yield_context yield) override;

 private:
  struct connection;
  struct cleanup {
    std::size_t slot;
    async_semaphore::permit permit;
  };

  // Maintenance thread.
  void maintain();
  bool open(connection& c, clock::time_point deadline, std::string& error);
  void finish_cleanups(std::vector<cleanup> work);
  void check_idle();
  void reconnect_broken();

  std::vector<std::unique_ptr<connection>> connections_;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;          // guarded by mutex_
  std::vector<cleanup> cleanups_;  // guarded by mutex_
  bool last_connect_failed_ = false;
  std::thread maintainer_;
};

}  // namespace gateway
