#include "gateway/sql/postgres_query.hpp"

#include "gateway/sql/postgres_row.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <nlohmann/json.hpp>

namespace gateway {

namespace net = boost::asio;

namespace {

enum class wait_result { ready, cancelled, failed };

// Waits on the I/O thread, without blocking it, until the connection's socket is readable or writable,
// or the call is cancelled. libpq owns the descriptor: it is wrapped only for the wait.
wait_result wait_socket(PGconn* conn, bool write, cancel_source* cancel, net::yield_context yield) {
  if (cancel && cancel->cancelled()) return wait_result::cancelled;
  const int fd = PQsocket(conn);
  if (fd < 0) return wait_result::failed;
  boost::system::error_code ec;
  net::posix::stream_descriptor descriptor(yield.get_executor());
  descriptor.assign(fd, ec);
  if (ec) return wait_result::failed;
  struct releaser {
    net::posix::stream_descriptor& d;
    ~releaser() { d.release(); }
  } release{descriptor};
  std::optional<cancel_source::scoped_hook> hook;
  if (cancel) hook.emplace(*cancel, [&descriptor] { descriptor.cancel(); });
  descriptor.async_wait(
      write ? net::posix::stream_descriptor::wait_write : net::posix::stream_descriptor::wait_read,
      yield[ec]);
  if (cancel && cancel->cancelled()) return wait_result::cancelled;
  return ec ? wait_result::failed : wait_result::ready;
}

}  // namespace

postgres_query_result run_postgres_query(postgres_connection& c,
                                         const std::vector<std::optional<std::string>>& values,
                                         std::size_t max_row_bytes, cancel_source* cancel,
                                         const std::string& downstream_name, net::yield_context yield) {
  call_result out;
  auto broken = [&](const char* detail) {
    out.outcome = call_outcome::error;
    out.detail = detail;
    out.body = {};
    return postgres_query_result{std::move(out), after_query::broken};
  };
  // The server may still be running the query: it is cancelled there, and the connection (with the
  // permit) returns once it is clean.
  auto cancelled = [&] {
    out.outcome = call_outcome::cancelled;
    out.detail = "query cancelled";
    out.body = {};
    return postgres_query_result{std::move(out), after_query::cancel_on_server};
  };

  // Text parameters go to libpq as C strings (it ignores their lengths), so a NUL would cut the value
  // short, and PostgreSQL text cannot hold one anyway: the call fails instead.
  for (const auto& v : values) {
    if (v && v->find('\0') != std::string::npos) {
      out.detail = "parameter contains NUL";
      return {std::move(out), after_query::idle};
    }
  }
  std::vector<const char*> pointers;
  std::vector<int> lengths;
  for (const auto& v : values) {
    pointers.push_back(v ? v->c_str() : nullptr);
    lengths.push_back(v ? static_cast<int>(v->size()) : 0);
  }
  if (!PQsendQueryPrepared(c.conn, postgres_statement_name, static_cast<int>(values.size()), pointers.data(),
                           lengths.data(), nullptr, 0)) {
    return broken("database connection lost");
  }
  PQsetSingleRowMode(c.conn);  // rows arrive one by one: the first is all the call needs
  for (;;) {
    const int rc = PQflush(c.conn);
    if (rc == 0) break;
    if (rc < 0) return broken("database connection lost");
    const auto w = wait_socket(c.conn, true, cancel, yield);
    if (w == wait_result::cancelled) return cancelled();
    if (w == wait_result::failed) return broken("database connection lost");
  }

  // Up to the first row, or to the end of a query that has none.
  bool have_row = false;
  const char* failure = nullptr;
  while (!have_row) {
    while (PQisBusy(c.conn)) {
      const auto w = wait_socket(c.conn, false, cancel, yield);
      if (w == wait_result::cancelled) return cancelled();
      if (w == wait_result::failed || !PQconsumeInput(c.conn)) return broken("database connection lost");
    }
    PGresult* res = PQgetResult(c.conn);
    if (res == nullptr) break;
    switch (PQresultStatus(res)) {
      case PGRES_SINGLE_TUPLE:
        if (!failure) {
          have_row = true;
          nlohmann::json row;
          failure = postgres_row_to_json(res, 0, max_row_bytes, row);
          if (!failure) {
            out.body = json_object_from(row);
            if (out.body.text.empty()) failure = "row not representable";  // not expected: checked above
          }
        }
        break;
      case PGRES_TUPLES_OK:
      case PGRES_COMMAND_OK:
        break;
      default:
        if (!failure) {
          failure = "query failed";
          spdlog::warn("sql downstream '{}': query failed: {}", downstream_name, pq_error(c.conn));
        }
    }
    PQclear(res);
  }
  if (failure) out.body = {};

  // The rows after the first are not wanted. Those libpq has already read are skipped (its input buffer is
  // small: a short result ends here, nothing more is read from the socket); if the query has not ended by
  // then, the rest is not read on this thread but cancelled on the server, as at the deadline.
  if (have_row) {
    bool ended = false;
    while (!ended && !PQisBusy(c.conn)) {
      PGresult* res = PQgetResult(c.conn);
      ended = res == nullptr;
      PQclear(res);
    }
    if (!ended) {
      if (failure) {
        out.detail = failure;
      } else {
        out.outcome = call_outcome::ok;
      }
      return {std::move(out), after_query::cancel_on_server};
    }
  }
  if (PQstatus(c.conn) != CONNECTION_OK) return broken("database connection lost");
  if (failure) {
    out.detail = failure;
  } else if (!have_row) {
    out.detail = "no row";
  } else {
    out.outcome = call_outcome::ok;
  }
  return {std::move(out), after_query::idle};
}

}  // namespace gateway
