#pragma once
// One libpq connection of a postgres_downstream's pool, with the call's query prepared on it, and the
// blocking steps of its life: opening it (connect, then prepare), asking the server to cancel a running
// query, reading what a cancelled query still sends, checking an idle one. The asynchronous query a call
// runs on it lives in postgres_query.
//
// Threading: open() and drain() block (poll with a deadline); they run on the pool's maintenance thread
// (or while the downstream is built, before the gateway serves), never on an I/O thread. A connection is
// used by one thread at a time; connection_slots and the pool's cleanup queue hand it over.
// Ownership: the pool owns every connection for the downstream's lifetime; close() (and the destructor)
// free the libpq objects.

#include "gateway/config/config.hpp"
#include "gateway/runtime/duration.hpp"

#include <libpq-fe.h>

#include <string>

namespace gateway {

// The name the query is prepared under on every connection.
inline constexpr const char* postgres_statement_name = "gateway_query";

// libpq's last error message for `conn` on one line ("out of memory" when there is no connection).
std::string pq_error(PGconn* conn);

struct postgres_connection {
  PGconn* conn = nullptr;      // null while closed
  PGcancel* cancel = nullptr;  // for cancel_query(); set once open

  postgres_connection() = default;
  postgres_connection(const postgres_connection&) = delete;
  postgres_connection& operator=(const postgres_connection&) = delete;
  ~postgres_connection() { close(); }

  void close();

  // Closes what was open, connects with `sql.dsn` in non-blocking mode and prepares `sql.statement`,
  // all before `deadline`. False, with `error` set and the connection closed, when any step fails.
  bool open(const sql_settings& sql, clock::time_point deadline, std::string& error);

  // Asks the server to cancel the query running on this connection. False with `error` set when the
  // request could not be sent (the query may still end on its own: drain() tells).
  bool cancel_query(std::string& error);

  // Reads every pending result. True when the connection ends up idle and usable; the first error a
  // result reported goes to `error`.
  bool drain(clock::time_point deadline, std::string& error);

  // For an idle connection: false when the server has closed it or it is otherwise unusable. Reads
  // only what has already arrived; never waits.
  bool idle_and_healthy();
};

}  // namespace gateway
