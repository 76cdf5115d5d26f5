#pragma once
// A call's query on its pooled PostgreSQL connection, run on the call's I/O thread without blocking it:
// send the prepared statement with the call's values, wait on the connection's socket (libpq in
// non-blocking mode) up to the first row or the end of the results, and turn that row into the call's
// entry. When the call is cancelled (its deadline, or the request abandoned), the wait ends at once.
// Errors are results, never exceptions.
//
// It leaves the pool alone: it says what must become of the connection (postgres_query_result::then), and
// the downstream does it. The connection is the caller's for the whole query; nothing of it is kept.

#include "gateway/downstream/call_result.hpp"
#include "gateway/runtime/cancel_source.hpp"
#include "gateway/sql/postgres_connection.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/spawn.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gateway {

enum class after_query {
  idle,              // clean and usable: back to the pool
  broken,            // lost: to be opened again
  cancel_on_server,  // the server may still be running the query (cancelled, or rows after the first)
};

struct postgres_query_result {
  call_result result;  // without its latency
  after_query then = after_query::idle;
};

// Runs the prepared statement on `c` with `values` bound (nullopt = NULL). A row whose values exceed
// `max_row_bytes` is a failure; `downstream_name` names the downstream in the log.
postgres_query_result run_postgres_query(postgres_connection& c,
                                         const std::vector<std::optional<std::string>>& values,
                                         std::size_t max_row_bytes, cancel_source* cancel,
                                         const std::string& downstream_name,
                                         boost::asio::yield_context yield);

}  // namespace gateway
