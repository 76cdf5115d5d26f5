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
// Parts: postgres_pool (the connections and the maintenance thread), postgres_connection (one libpq
// connection and its blocking steps), postgres_query (a call's query on an I/O thread), postgres_row (a
// row as JSON).

#include "gateway/sql/sql_downstream.hpp"

#include <memory>
#include <vector>

namespace gateway {

class postgres_pool;

class postgres_downstream final : public sql_downstream {
 public:
  explicit postgres_downstream(const downstream_settings& settings);
  ~postgres_downstream() override;

 protected:
  call_result run_query(std::size_t slot, std::vector<std::optional<std::string>> values,
                        const call_request& request, async_semaphore::permit permit,
                        boost::asio::yield_context yield) override;

 private:
  std::unique_ptr<postgres_pool> pool_;  // owned; built after, and stopped before, the base's members
};

}  // namespace gateway
