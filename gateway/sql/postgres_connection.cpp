#include "gateway/sql/postgres_connection.hpp"

#include "gateway/runtime/io_thread.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>

namespace gateway {

namespace {

// Blocks (never on an I/O thread) until the socket is ready or `deadline` passes.
bool poll_socket(PGconn* conn, bool write, clock::time_point deadline) {
  const int fd = PQsocket(conn);
  if (fd < 0) return false;
  pollfd p{fd, static_cast<short>(write ? POLLOUT : POLLIN), 0};
  for (;;) {
    const auto left = millis_left(deadline);
    const int rc = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 60'000)));
    if (rc > 0) return true;
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0 || left == 0) return false;
  }
}

bool flush_blocking(PGconn* conn, clock::time_point deadline) {
  for (;;) {
    const int rc = PQflush(conn);
    if (rc == 0) return true;
    if (rc < 0 || !poll_socket(conn, true, deadline)) return false;
  }
}

}  // namespace

std::string pq_error(PGconn* conn) {
  std::string text = conn ? PQerrorMessage(conn) : "out of memory";
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (auto& c : text) {
    if (c == '\n') c = ' ';
  }
  return text;
}

void postgres_connection::close() {
  if (cancel) PQfreeCancel(cancel);
  if (conn) PQfinish(conn);
  cancel = nullptr;
  conn = nullptr;
}

bool postgres_connection::open(const sql_settings& sql, clock::time_point deadline, std::string& error) {
  require_off_io_thread("PQconnectStart");
  close();
  const char* keys[] = {"dbname", "fallback_application_name", nullptr};
  const char* values[] = {sql.dsn.c_str(), "gateway", nullptr};
  conn = PQconnectStartParams(keys, values, 1);
  if (conn == nullptr || PQstatus(conn) == CONNECTION_BAD) {
    error = pq_error(conn);
    close();
    return false;
  }
  auto state = PGRES_POLLING_WRITING;
  while (state != PGRES_POLLING_OK) {
    if (state == PGRES_POLLING_FAILED) {
      error = pq_error(conn);
      close();
      return false;
    }
    if (!poll_socket(conn, state == PGRES_POLLING_WRITING, deadline)) {
      error = "connect timed out";
      close();
      return false;
    }
    state = PQconnectPoll(conn);
  }
  PQsetnonblocking(conn, 1);
  std::string prepare_error;
  const bool sent = PQsendPrepare(conn, postgres_statement_name, sql.statement.c_str(),
                                  static_cast<int>(sql.params.size()), nullptr) &&
                    flush_blocking(conn, deadline);
  if (!sent || !drain(deadline, prepare_error) || !prepare_error.empty()) {
    error = prepare_error.empty() ? pq_error(conn) : "query does not prepare: " + prepare_error;
    while (!error.empty() && (error.back() == '\n' || error.back() == ' ')) error.pop_back();
    close();
    return false;
  }
  cancel = PQgetCancel(conn);
  return true;
}

bool postgres_connection::cancel_query(std::string& error) {
  char text[256];
  if (!cancel || PQcancel(cancel, text, sizeof text)) return true;
  error = text;
  return false;
}

bool postgres_connection::drain(clock::time_point deadline, std::string& error) {
  for (;;) {
    while (PQisBusy(conn)) {
      if (!poll_socket(conn, false, deadline) || !PQconsumeInput(conn)) return false;
    }
    PGresult* res = PQgetResult(conn);
    if (res == nullptr) break;
    const auto status = PQresultStatus(res);
    if ((status == PGRES_FATAL_ERROR || status == PGRES_BAD_RESPONSE) && error.empty())
      error = PQresultErrorMessage(res);
    PQclear(res);
  }
  return PQstatus(conn) == CONNECTION_OK && PQtransactionStatus(conn) == PQTRANS_IDLE;
}

bool postgres_connection::idle_and_healthy() {
  pollfd p{PQsocket(conn), POLLIN, 0};
  bool ok = p.fd >= 0;
  if (ok && ::poll(&p, 1, 0) > 0) ok = PQconsumeInput(conn) && PQstatus(conn) == CONNECTION_OK;
  return ok;
}

}  // namespace gateway
