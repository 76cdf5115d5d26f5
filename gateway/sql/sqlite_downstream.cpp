#include "gateway/sql/sqlite_downstream.hpp"

#include "gateway/codec/json_text.hpp"
#include "gateway/runtime/io_thread.hpp"
#include "gateway/runtime/wake_event.hpp"

#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/rfc/pchars.hpp>
#include <nlohmann/json.hpp>

#include <charconv>
#include <stdexcept>
#include <thread>

namespace gateway {

namespace net = boost::asio;

struct sqlite_downstream::connection {
  sqlite3* db = nullptr;
  sqlite3_stmt* statement = nullptr;
  std::mutex running_mutex;       // orders interrupt() against the start and end of a job
  std::uint64_t running_job = 0;  // guarded by running_mutex
  std::atomic<bool> give_up{false};
  std::atomic<clock::rep> deadline{0};

  ~connection() {
    sqlite3_finalize(statement);
    sqlite3_close_v2(db);
  }
};

struct sqlite_downstream::job {
  explicit job(const net::any_io_executor& ex) : executor(ex) {}
  net::any_io_executor executor;  // the coroutine's: the result is posted back there
  wake_event wake;                // touched only on the coroutine's executor
  bool done = false;              // idem
  std::uint64_t id = 0;
  std::size_t slot = 0;
  bool cancelled = false;  // guarded by the connection's running_mutex
  std::vector<std::optional<std::string>> values;
  async_semaphore::permit permit;
  call_result result;  // written by the pool thread before the post back
};

namespace {

std::string sqlite_error(sqlite3* db) {
  return db ? sqlite3_errmsg(db) : "out of memory";
}

// A read-only database is opened as an immutable URI: no locks, no journal, no -wal/-shm files, so it
// works on a read-only file system (a file baked into a container image).
std::string immutable_uri(const std::string& path) {
  // A path's characters stay as they are except those a URI path cannot hold ('%', '?', '#', ...).
  static constexpr auto kept = boost::urls::pchars + '/';
  return "file:" + boost::urls::encode(path, kept) + "?immutable=1";
}

}  // namespace

sqlite_downstream::sqlite_downstream(const downstream_settings& settings) : sql_downstream(settings) {
  require_off_io_thread("sqlite3_open_v2");
  const auto& sql = settings.sql;
  auto fail = [&](const std::string& what) {
    throw std::runtime_error("sql downstream '" + settings.name + "': " + what);
  };
  const std::string name = sql.read_only ? immutable_uri(sql.database) : sql.database;
  const int flags =
      SQLITE_OPEN_NOMUTEX | (sql.read_only ? SQLITE_OPEN_READONLY | SQLITE_OPEN_URI : SQLITE_OPEN_READWRITE);
  for (std::size_t i = 0; i < sql.pool_size; ++i) {
    auto c = std::make_unique<connection>();
    const int rc = sqlite3_open_v2(name.c_str(), &c->db, flags, nullptr);
    if (rc != SQLITE_OK) fail("cannot open database '" + sql.database + "': " + sqlite_error(c->db));
    if (i == 0 && !sql.read_only) {
      char* message = nullptr;
      if (sqlite3_exec(c->db, "PRAGMA journal_mode=WAL", nullptr, nullptr, &message) != SQLITE_OK) {
        spdlog::warn("sql downstream '{}': cannot switch to WAL mode: {}", settings.name,
                     message ? message : "unknown error");
      }
      sqlite3_free(message);
    }
    // Another writer holds the lock: retry briefly until the call's deadline or an interrupt (the
    // built-in busy timeout would sleep through both).
    sqlite3_busy_handler(
        c->db,
        [](void* context, int attempts) -> int {
          auto* conn = static_cast<connection*>(context);
          if (conn->give_up.load(std::memory_order_relaxed)) return 0;
          const auto deadline = clock::time_point(clock::duration(conn->deadline.load()));
          if (clock::now() >= deadline) return 0;
          std::this_thread::sleep_for(std::chrono::milliseconds(attempts < 4 ? 1 : 5));
          return 1;
        },
        c.get());
    const char* tail = nullptr;
    if (sqlite3_prepare_v3(c->db, sql.statement.c_str(), static_cast<int>(sql.statement.size() + 1),
                           SQLITE_PREPARE_PERSISTENT, &c->statement, &tail) != SQLITE_OK) {
      fail("query does not prepare: " + sqlite_error(c->db));
    }
    if (c->statement == nullptr) fail("query is empty");
    for (; tail && *tail; ++tail) {
      if (*tail != ' ' && *tail != '\n' && *tail != '\t' && *tail != '\r' && *tail != ';')
        fail("query must be a single statement");
    }
    if (static_cast<std::size_t>(sqlite3_bind_parameter_count(c->statement)) != sql.params.size())
      fail("query placeholders do not match its :names");
    connections_.push_back(std::move(c));
    slots_.put_idle(i);
  }
  threads_ = std::make_unique<net::thread_pool>(sql.pool_size);
  spdlog::info("sql downstream '{}': sqlite {} open{} with {} connections, {} permits", settings.name,
               sql.database, sql.read_only ? " read-only" : "", sql.pool_size, sql.effective_permits());
}

sqlite_downstream::~sqlite_downstream() {
  for (auto& c : connections_) {
    c->give_up = true;
    sqlite3_interrupt(c->db);
  }
  threads_->join();
}

call_result sqlite_downstream::run_query(std::size_t slot, std::vector<std::optional<std::string>> values,
                                         const call_request& request, async_semaphore::permit permit,
                                         net::yield_context yield) {
  call_result out;
  auto j = std::make_shared<job>(yield.get_executor());
  j->id = next_job_.fetch_add(1, std::memory_order_relaxed);
  j->slot = slot;
  j->values = std::move(values);
  j->permit = std::move(permit);
  connections_[slot]->deadline = request.deadline.time_since_epoch().count();
  net::post(*threads_, [this, j] { execute(j); });

  {
    std::optional<cancel_source::scoped_hook> hook;
    if (request.cancel) {
      // Deferred: the canceller (a fan-out's or a session registry's loop) goes on after this hook, and
      // resuming here would let this call, and then its whole request, end under it.
      hook.emplace(*request.cancel, [this, j] {
        interrupt(*j);
        j->wake.notify();
      });
    }
    while (!j->done && !(request.cancel && request.cancel->cancelled())) j->wake.wait(yield);
  }
  if (j->done) return std::move(j->result);
  out.outcome = call_outcome::cancelled;
  out.detail = "query interrupted";
  return out;
}

void sqlite_downstream::interrupt(job& j) {
  auto& c = *connections_[j.slot];
  std::lock_guard lock(c.running_mutex);
  j.cancelled = true;
  if (c.running_job == j.id) {
    c.give_up = true;
    sqlite3_interrupt(c.db);
    stats_.server_cancels.fetch_add(1, std::memory_order_relaxed);
  }
}

void sqlite_downstream::execute(const std::shared_ptr<job>& j) {
  require_off_io_thread("sqlite3_step");
  auto& c = *connections_[j->slot];
  auto& r = j->result;
  bool skip = false;
  {
    std::lock_guard lock(c.running_mutex);
    skip = j->cancelled;
    c.give_up = false;
    if (!skip) c.running_job = j->id;
  }
  if (skip) {
    r.outcome = call_outcome::cancelled;
    r.detail = "query interrupted";
  } else {
    sqlite3_stmt* st = c.statement;
    for (std::size_t i = 0; i < j->values.size(); ++i) {
      const auto& v = j->values[i];
      const int position = static_cast<int>(i + 1);
      if (v) {
        sqlite3_bind_text(st, position, v->data(), static_cast<int>(v->size()), SQLITE_STATIC);
      } else {
        sqlite3_bind_null(st, position);
      }
    }
    const int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      // The row as JSON text, written directly: column names and text as JSON strings, numbers as they
      // are (a double through the JSON library, for its shortest exact form and null for NaN/inf).
      std::string text = "{";
      std::size_t bytes = 0;
      const int columns = sqlite3_column_count(st);
      for (int col = 0; col < columns; ++col) {
        if (col > 0) text += ',';
        const char* name = sqlite3_column_name(st, col);
        append_json_string(text, name ? name : "");
        text += ':';
        switch (sqlite3_column_type(st, col)) {
          case SQLITE_INTEGER: {
            char digits[24];
            const auto end = std::to_chars(digits, digits + sizeof digits, sqlite3_column_int64(st, col)).ptr;
            text.append(digits, end);
            break;
          }
          case SQLITE_FLOAT:
            text += nlohmann::json(sqlite3_column_double(st, col)).dump();
            break;
          case SQLITE_TEXT: {
            const auto* chars = reinterpret_cast<const char*>(sqlite3_column_text(st, col));
            const auto size = static_cast<std::size_t>(sqlite3_column_bytes(st, col));
            append_json_string(text, std::string_view(chars ? chars : "", chars ? size : 0));
            bytes += size;
            break;
          }
          case SQLITE_BLOB: {
            const auto* data = static_cast<const unsigned char*>(sqlite3_column_blob(st, col));
            const auto size = static_cast<std::size_t>(sqlite3_column_bytes(st, col));
            std::string encoded;
            base64_append(encoded, data, size);
            text += '"';
            text += encoded;
            text += '"';
            bytes += size;
            break;
          }
          default:
            text += "null";
        }
      }
      text += '}';
      if (bytes > settings_.max_response_bytes) {
        r.detail = "row too large";
      } else if (parse_json_object(std::move(text), r.body)) {
        r.outcome = call_outcome::ok;
      } else {
        r.detail = "row not representable";  // not expected: the text above is valid JSON
      }
    } else if (rc == SQLITE_DONE) {
      r.detail = "no row";
    } else if (rc == SQLITE_INTERRUPT || c.give_up) {
      r.outcome = call_outcome::cancelled;
      r.detail = "query interrupted";
    } else if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
      r.detail = "database busy";
    } else {
      r.detail = "query failed";
      spdlog::warn("sql downstream '{}': query failed: {}", settings_.name, sqlite3_errmsg(c.db));
    }
    std::lock_guard lock(c.running_mutex);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    c.running_job = 0;
  }
  slots_.put_idle(j->slot);
  j->permit.release();
  net::post(j->executor, [j] {
    j->done = true;
    j->wake.notify();
  });
}

}  // namespace gateway
