#include "gateway/sql/postgres_downstream.hpp"

#include "gateway/core/io_thread.hpp"

#include <libpq-fe.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <nlohmann/json.hpp>

#include <charconv>
#include <cstring>

namespace gateway {

namespace net = boost::asio;

namespace {

constexpr const char* statement_name = "gateway_query";
constexpr auto check_interval = std::chrono::milliseconds(500);
constexpr auto max_backoff = std::chrono::seconds(5);
constexpr auto drain_timeout = std::chrono::seconds(5);

// PostgreSQL type OIDs (pg_type.dat) that map to JSON numbers, booleans or documents.
enum : Oid {
  oid_bool = 16,
  oid_int8 = 20,
  oid_int2 = 21,
  oid_int4 = 23,
  oid_oid = 26,
  oid_json = 114,
  oid_float4 = 700,
  oid_float8 = 701,
  oid_numeric = 1700,
  oid_jsonb = 3802,
};

std::string pq_error(PGconn* conn) {
  std::string text = conn ? PQerrorMessage(conn) : "out of memory";
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (auto& c : text) {
    if (c == '\n') c = ' ';
  }
  return text;
}

// Blocks (maintenance thread only) until the socket is ready or `deadline` passes.
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

// Reads every pending result (maintenance thread). True when the connection ends up idle and usable;
// the first error a result reported goes to `error`.
bool drain_blocking(PGconn* conn, clock::time_point deadline, std::string& error) {
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

bool flush_blocking(PGconn* conn, clock::time_point deadline) {
  for (;;) {
    const int rc = PQflush(conn);
    if (rc == 0) return true;
    if (rc < 0 || !poll_socket(conn, true, deadline)) return false;
  }
}

// A JSON column nests at most this deep: parse_json_object accepts 64 levels, and the row's own object is
// the first of them.
constexpr int max_value_depth = 63;

// Whether the JSON text nests arrays and objects at most `limit` deep. A flat scan that counts brackets
// outside strings (the syntax is checked later): it runs before anything that recurses once per level of
// the document, such as printing it, on the call's small coroutine stack.
bool nesting_within(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

template <class T>
bool parse_number(std::string_view text, T& out) {
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end;
}

// One row of a text-format result as a JSON object. Returns why it cannot be one (its values exceed
// `limit` bytes, or a JSON value nests too deep), or nullptr.
const char* row_to_json(const PGresult* res, int row, std::size_t limit, nlohmann::json& out) {
  out = nlohmann::json::object();
  std::size_t bytes = 0;
  const int columns = PQnfields(res);
  for (int col = 0; col < columns; ++col) {
    auto& value = out[PQfname(res, col)];
    if (PQgetisnull(res, row, col)) {
      value = nullptr;
      continue;
    }
    const std::string_view text(PQgetvalue(res, row, col),
                                static_cast<std::size_t>(PQgetlength(res, row, col)));
    bytes += text.size();
    if (bytes > limit) return "row too large";
    switch (PQftype(res, col)) {
      case oid_bool:
        value = text == "t";
        continue;
      case oid_int2:
      case oid_int4:
      case oid_int8:
      case oid_oid: {
        std::int64_t n = 0;
        if (parse_number(text, n)) {
          value = n;
          continue;
        }
        break;
      }
      case oid_numeric: {
        std::int64_t n = 0;
        double d = 0;
        if (parse_number(text, n)) {
          value = n;
          continue;
        }
        if (parse_number(text, d)) {
          value = d;
          continue;
        }
        break;  // NaN, Infinity, or beyond double: keep the exact text
      }
      case oid_float4:
      case oid_float8: {
        double d = 0;
        if (text.find_first_not_of("0123456789.eE+-") == std::string_view::npos && parse_number(text, d)) {
          value = d;
          continue;
        }
        break;
      }
      case oid_json:
      case oid_jsonb: {
        if (!nesting_within(text, max_value_depth)) return "value nested too deep";
        auto parsed = nlohmann::json::parse(text, nullptr, false);
        if (!parsed.is_discarded()) {
          value = std::move(parsed);
          continue;
        }
        break;
      }
      default:
        break;
    }
    value = std::string(text);
  }
  return nullptr;
}

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

struct postgres_downstream::connection {
  PGconn* conn = nullptr;
  PGcancel* cancel = nullptr;

  void close() {
    if (cancel) PQfreeCancel(cancel);
    if (conn) PQfinish(conn);
    cancel = nullptr;
    conn = nullptr;
  }
  ~connection() { close(); }
};

postgres_downstream::postgres_downstream(const downstream_settings& settings) : sql_downstream(settings) {
  const auto& sql = settings.sql;
  std::size_t opened = 0;
  for (std::size_t i = 0; i < sql.pool_size; ++i) {
    connections_.push_back(std::make_unique<connection>());
    std::string error;
    if (!last_connect_failed_ && open(*connections_.back(), clock::now() + settings.connect_timeout, error)) {
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

postgres_downstream::~postgres_downstream() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  maintainer_.join();
}

bool postgres_downstream::open(connection& c, clock::time_point deadline, std::string& error) {
  require_off_io_thread("PQconnectStart");
  c.close();
  const char* keys[] = {"dbname", "fallback_application_name", nullptr};
  const char* values[] = {settings_.sql.dsn.c_str(), "gateway", nullptr};
  c.conn = PQconnectStartParams(keys, values, 1);
  if (c.conn == nullptr || PQstatus(c.conn) == CONNECTION_BAD) {
    error = pq_error(c.conn);
    c.close();
    return false;
  }
  auto state = PGRES_POLLING_WRITING;
  while (state != PGRES_POLLING_OK) {
    if (state == PGRES_POLLING_FAILED) {
      error = pq_error(c.conn);
      c.close();
      return false;
    }
    if (!poll_socket(c.conn, state == PGRES_POLLING_WRITING, deadline)) {
      error = "connect timed out";
      c.close();
      return false;
    }
    state = PQconnectPoll(c.conn);
  }
  PQsetnonblocking(c.conn, 1);
  const auto& sql = settings_.sql;
  std::string prepare_error;
  const bool sent = PQsendPrepare(c.conn, statement_name, sql.statement.c_str(),
                                  static_cast<int>(sql.params.size()), nullptr) &&
                    flush_blocking(c.conn, deadline);
  if (!sent || !drain_blocking(c.conn, deadline, prepare_error) || !prepare_error.empty()) {
    error = prepare_error.empty() ? pq_error(c.conn) : "query does not prepare: " + prepare_error;
    while (!error.empty() && (error.back() == '\n' || error.back() == ' ')) error.pop_back();
    c.close();
    return false;
  }
  c.cancel = PQgetCancel(c.conn);
  return true;
}

call_result postgres_downstream::run_query(std::size_t slot, std::vector<std::optional<std::string>> values,
                                           const call_request& request, async_semaphore::permit permit,
                                           net::yield_context yield) {
  call_result out;
  auto& c = *connections_[slot];
  auto broken = [&](const char* detail) {
    slots_.put_broken(slot);
    out.outcome = call_outcome::error;
    out.detail = detail;
    out.body = {};
    return std::move(out);
  };
  // The server may still be running the query: the maintenance thread cancels it there and returns the
  // connection (and the permit) once it is clean.
  auto cancel_on_server = [&] {
    stats_.server_cancels.fetch_add(1, std::memory_order_relaxed);
    {
      std::lock_guard lock(mutex_);
      cleanups_.push_back({slot, std::move(permit)});
    }
    wake_.notify_one();
  };
  auto cancelled = [&] {
    cancel_on_server();
    out.outcome = call_outcome::cancelled;
    out.detail = "query cancelled";
    out.body = {};
    return std::move(out);
  };

  // Text parameters go to libpq as C strings (it ignores their lengths), so a NUL would cut the value
  // short, and PostgreSQL text cannot hold one anyway: the call fails instead.
  for (const auto& v : values) {
    if (v && v->find('\0') != std::string::npos) {
      slots_.put_idle(slot);
      out.detail = "parameter contains NUL";
      return out;
    }
  }
  std::vector<const char*> pointers;
  std::vector<int> lengths;
  for (const auto& v : values) {
    pointers.push_back(v ? v->c_str() : nullptr);
    lengths.push_back(v ? static_cast<int>(v->size()) : 0);
  }
  if (!PQsendQueryPrepared(c.conn, statement_name, static_cast<int>(values.size()), pointers.data(),
                           lengths.data(), nullptr, 0)) {
    return broken("database connection lost");
  }
  PQsetSingleRowMode(c.conn);  // rows arrive one by one: the first is all the call needs
  for (;;) {
    const int rc = PQflush(c.conn);
    if (rc == 0) break;
    if (rc < 0) return broken("database connection lost");
    const auto w = wait_socket(c.conn, true, request.cancel, yield);
    if (w == wait_result::cancelled) return cancelled();
    if (w == wait_result::failed) return broken("database connection lost");
  }

  // Up to the first row, or to the end of a query that has none.
  bool have_row = false;
  const char* failure = nullptr;
  while (!have_row) {
    while (PQisBusy(c.conn)) {
      const auto w = wait_socket(c.conn, false, request.cancel, yield);
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
          failure = row_to_json(res, 0, settings_.max_response_bytes, row);
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
          spdlog::warn("sql downstream '{}': query failed: {}", settings_.name, pq_error(c.conn));
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
      cancel_on_server();
      if (failure) {
        out.detail = failure;
      } else {
        out.outcome = call_outcome::ok;
      }
      return out;
    }
  }
  if (PQstatus(c.conn) != CONNECTION_OK) return broken("database connection lost");
  slots_.put_idle(slot);
  if (failure) {
    out.detail = failure;
  } else if (!have_row) {
    out.detail = "no row";
  } else {
    out.outcome = call_outcome::ok;
  }
  return out;
}

void postgres_downstream::maintain() {
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

void postgres_downstream::finish_cleanups(std::vector<cleanup> work) {
  char error[256];
  for (auto& w : work) {
    auto& c = *connections_[w.slot];
    if (c.cancel && !PQcancel(c.cancel, error, sizeof error))
      spdlog::debug("sql downstream '{}': cancel request failed: {}", settings_.name, error);
  }
  const auto deadline = clock::now() + drain_timeout;
  for (auto& w : work) {
    auto& c = *connections_[w.slot];
    std::string ignored;  // "canceling statement due to user request"
    if (drain_blocking(c.conn, deadline, ignored)) {
      slots_.put_idle(w.slot);
    } else {
      c.close();
      slots_.put_broken(w.slot);
    }
    w.permit.release();
  }
}

void postgres_downstream::check_idle() {
  // A connection the server closed while idle (restart, idle timeout, admin kill) is found here rather
  // than by a caller. Each check is a poll with no wait.
  slots_.sweep_idle([this](std::size_t slot) {
    auto& c = *connections_[slot];
    pollfd p{PQsocket(c.conn), POLLIN, 0};
    bool ok = p.fd >= 0;
    if (ok && ::poll(&p, 1, 0) > 0) ok = PQconsumeInput(c.conn) && PQstatus(c.conn) == CONNECTION_OK;
    if (!ok) c.close();
    return ok;
  });
}

void postgres_downstream::reconnect_broken() {
  auto broken = slots_.take_broken();
  std::size_t i = 0;
  for (; i < broken.size(); ++i) {
    std::string error;
    if (!open(*connections_[broken[i]], clock::now() + settings_.connect_timeout, error)) {
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
