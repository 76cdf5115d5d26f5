#include "gateway/observe/logging.hpp"

#include "gateway/codec/json_text.hpp"
#include "gateway/observe/degraded_list.hpp"
#include "gateway/trace/redaction.hpp"

#include <limits.h>
#include <poll.h>
#include <spdlog/async.h>
#include <spdlog/async_logger.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <mutex>

namespace gateway {

namespace {

constexpr auto write_patience = std::chrono::milliseconds(100);  // per write, when the fd is not writable
constexpr auto stuck_pause = std::chrono::seconds(1);            // after a stuck write, drop without waiting
constexpr std::size_t max_user_agent = 256;                      // bytes of User-Agent logged

std::string_view call_name(const access_entry& e, std::size_t i) {
  if (e.calls_of == nullptr || i >= e.calls_of->calls.size()) return "?";
  return e.calls_of->calls[i].name;
}

// Writes one line through a pointer into a buffer of this thread's with room for the longest line the
// entry can give (line_room), then appends it to `out` at once: one copy instead of a capacity check per
// piece, and no clearing of the room first.
class line_writer {
 public:
  line_writer(std::string& out, std::size_t bound) : out_(out) {
    thread_local std::unique_ptr<char[]> buffer;
    thread_local std::size_t size = 0;
    if (bound > size) {
      size = std::max<std::size_t>(bound, 16 * 1024);
      buffer = std::make_unique_for_overwrite<char[]>(size);
    }
    start_ = at_ = buffer.get();
  }
  ~line_writer() { out_.append(start_, static_cast<std::size_t>(at_ - start_)); }
  line_writer(const line_writer&) = delete;
  line_writer& operator=(const line_writer&) = delete;

  void raw(std::string_view text) {
    std::memcpy(at_, text.data(), text.size());
    at_ += text.size();
  }
  void ch(char c) { *at_++ = c; }
  void number(std::uint64_t value) { at_ = std::to_chars(at_, at_ + 20, value).ptr; }
  // Three decimal digits after a point: the thousandths of `value` ("151.027" for 151027).
  void thousandths(std::uint64_t value) {
    number(value / 1000);
    const auto frac = static_cast<unsigned>(value % 1000);
    at_[0] = '.';
    at_[1] = static_cast<char>('0' + frac / 100);
    at_[2] = static_cast<char>('0' + frac / 10 % 10);
    at_[3] = static_cast<char>('0' + frac % 10);
    at_ += 4;
  }
  // Milliseconds with three decimals ("151.027").
  void millis(double ms) {
    if (!(ms >= 0) || ms > 1e12) ms = 0;
    thousandths(static_cast<std::uint64_t>(ms * 1000.0 + 0.5));
  }
  // UTC, to the millisecond: "2026-12-02T02:10:31.204Z" (the seconds formatted once per second).
  void time(std::chrono::system_clock::time_point t, time_stamp_cache& stamps) {
    const auto since = t.time_since_epoch();
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since);
    const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since - seconds).count();
    if (seconds.count() != stamps.second) {
      const std::time_t tt = static_cast<std::time_t>(seconds.count());
      std::tm tm{};
      ::gmtime_r(&tt, &tm);
      std::strftime(stamps.text, sizeof stamps.text, "%Y-%m-%dT%H:%M:%S", &tm);
      stamps.second = seconds.count();
    }
    raw(stamps.text);
    const auto ms = static_cast<int>(millis);
    at_[0] = '.';
    at_[1] = static_cast<char>('0' + ms / 100);
    at_[2] = static_cast<char>('0' + ms / 10 % 10);
    at_[3] = static_cast<char>('0' + ms % 10);
    at_[4] = 'Z';
    at_ += 5;
  }
  // A JSON string: the text as it is when nothing needs escaping, else as append_json_string escapes it.
  void json(std::string_view text) {
    *at_++ = '"';
    for (std::size_t i = 0; i < text.size(); ++i) {
      const auto c = static_cast<unsigned char>(text[i]);
      if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
        --at_;  // the opening quote: append_json_string writes its own
        thread_local std::string escaped;
        escaped.clear();
        append_json_string(escaped, text);
        return raw(escaped);
      }
      at_[i] = static_cast<char>(c);
    }
    at_ += text.size();
    *at_++ = '"';
  }

 private:
  std::string& out_;
  char* start_;
  char* at_;
};

// Room for any text of `size` bytes as a JSON string: quotes, and each byte at most 6 (\u00XX, or
// U+FFFD for a byte of invalid UTF-8).
constexpr std::size_t json_room(std::size_t size) {
  return 2 + 6 * size;
}

// The most a line of `e` (its target redacted as `path`) takes in either format: each text as a JSON
// string at its longest, 512 bytes for the keys, numbers and time, 128 per call beside its name.
std::size_t line_room(const access_entry& e, std::string_view path, std::string_view user_agent) {
  std::size_t room = 512 + json_room(e.request_id.size()) + json_room(e.method.size()) +
                     json_room(e.route.size()) + json_room(path.size()) + json_room(e.degraded.size()) +
                     json_room(e.client.size()) + json_room(e.proxy.size()) + json_room(user_agent.size()) +
                     json_room(e.trace_id.size());
  for (std::size_t i = 0; i < e.calls.size(); ++i) room += 128 + json_room(call_name(e, i).size());
  return room;
}

void append_json_line(line_writer& w, const access_entry& e, std::string_view path,
                      std::string_view user_agent, time_stamp_cache& stamps) {
  w.raw("{\"time\":\"");
  w.time(e.time, stamps);
  w.raw("\",\"request_id\":");
  w.json(e.request_id);
  w.raw(",\"method\":");
  w.json(e.method);
  w.raw(",\"route\":");
  w.json(e.route);
  w.raw(",\"path\":");
  w.json(path);
  w.raw(",\"status\":");
  w.number(e.status);
  w.raw(",\"duration_ms\":");
  w.millis(e.duration_ms);
  w.raw(",\"degraded\":[");
  bool first = true;
  for_each_degraded(e.degraded, [&](std::string_view name, std::string_view) {
    if (!first) w.ch(',');
    first = false;
    w.json(name);
  });
  w.raw("],\"bytes\":");
  w.number(e.bytes);
  w.raw(",\"client\":");
  w.json(e.client);
  if (!e.proxy.empty()) {
    w.raw(",\"proxy\":");
    w.json(e.proxy);
  }
  w.raw(",\"user_agent\":");
  w.json(user_agent);
  if (!e.trace_id.empty()) {
    w.raw(",\"trace_id\":");
    w.json(e.trace_id);
  }
  if (!e.calls.empty()) {
    w.raw(",\"calls\":[");
    for (std::size_t i = 0; i < e.calls.size(); ++i) {
      const auto& c = e.calls[i];
      if (i != 0) w.ch(',');
      w.raw("{\"name\":");
      w.json(call_name(e, i));
      w.raw(",\"outcome\":\"");
      w.raw(outcome_label(c.outcome));  // at most 12 characters
      if (c.cached) {
        w.raw("\",\"cached\":true,\"age_s\":");
        w.number(c.age);
        w.raw(",\"status\":");
      } else {
        w.raw("\",\"status\":");
      }
      w.number(c.status);
      w.raw(",\"ms\":");
      w.thousandths(c.latency_us);
      w.ch('}');
    }
    w.ch(']');
  }
  w.ch('}');
}

// The same fields on one plain line; the texts a client chose freely (user agent) as a JSON string.
void append_text_line(line_writer& w, const access_entry& e, std::string_view path,
                      std::string_view user_agent, time_stamp_cache& stamps) {
  w.time(e.time, stamps);
  w.ch(' ');
  w.raw(e.request_id.empty() ? "-" : e.request_id);
  w.ch(' ');
  w.raw(e.method);
  w.ch(' ');
  w.raw(e.route);
  w.ch(' ');
  w.number(e.status);
  w.ch(' ');
  w.millis(e.duration_ms);
  w.raw("ms degraded=");
  if (e.degraded.empty()) w.ch('-');
  bool first = true;
  for_each_degraded(e.degraded, [&](std::string_view name, std::string_view) {
    if (!first) w.ch(',');
    first = false;
    w.raw(name);
  });
  w.raw(" bytes=");
  w.number(e.bytes);
  w.raw(" client=");
  w.raw(e.client);
  if (!e.proxy.empty()) {
    w.raw(" proxy=");
    w.raw(e.proxy);
  }
  w.raw(" path=");
  w.raw(path);  // a request target has no spaces nor controls (the parser's)
  w.raw(" ua=");
  w.json(user_agent);
  w.raw(" trace=");
  w.raw(e.trace_id.empty() ? "-" : e.trace_id);
  if (!e.calls.empty()) {
    w.raw(" calls=");
    for (std::size_t i = 0; i < e.calls.size(); ++i) {
      const auto& c = e.calls[i];
      if (i != 0) w.ch(',');
      w.raw(call_name(e, i));
      w.ch(':');
      w.raw(outcome_label(c.outcome));
      w.ch(':');
      w.number(c.status);
      w.ch(':');
      w.thousandths(c.latency_us);
      w.raw("ms");
      if (c.cached) {
        w.raw(":cached:");
        w.number(c.age);
        w.ch('s');
      }
    }
  }
}

// Whether `fd` is a regular file (asked once per output: what it is does not change).
bool output_is_file(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

// Writes `data` whole to `fd`, waiting at most write_patience for each chance to write; the bytes
// written (fewer when the fd stayed unwritable or failed). The fd may be blocking (stdout is the
// process's, shared): a pipe, a terminal or a socket that polls writable takes PIPE_BUF bytes without
// blocking, but a larger write would wait for the reader, so only a regular file (`file`) takes it all
// at once.
std::size_t write_patiently(int fd, std::string_view data, bool file) {
  std::size_t done = 0;
  while (done < data.size()) {
    pollfd p{fd, POLLOUT, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(write_patience.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL))) break;
    const auto size = file ? data.size() - done : std::min<std::size_t>(data.size() - done, PIPE_BUF);
    const auto n = ::write(fd, data.data() + done, size);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // ENOSPC, EPIPE, EBADF...
    done += static_cast<std::size_t>(n);
  }
  return done;
}

}  // namespace

void append_access_line(std::string& out, const access_entry& e, log_format format,
                        time_stamp_cache& stamps) {
  thread_local std::string path;  // kept per thread: no allocation per line
  path.clear();
  append_redacted_target(path, e.target);
  const auto user_agent = e.user_agent.substr(0, max_user_agent);
  line_writer w(out, line_room(e, path, user_agent));  // its destructor appends the line to `out`
  if (format == log_format::json) {
    append_json_line(w, e, path, user_agent, stamps);
  } else {
    append_text_line(w, e, path, user_agent, stamps);
  }
}

std::string format_access_line(const access_entry& e, log_format format) {
  std::string line;
  time_stamp_cache stamps;
  append_access_line(line, e, format, stamps);
  return line;
}

// One I/O thread's lines not yet written. `pending` is appended to by that thread and taken whole by the
// writer thread, both under `mutex`.
struct access_log::lane {
  std::mutex mutex;
  std::string pending;
  bool woke_writer = false;  // since the last flush
  time_stamp_cache stamps;
};

access_log::access_log(log_format format, std::size_t writers, int fd,
                       std::chrono::milliseconds flush_interval)
    : format_(format), fd_(fd), fd_is_file_(output_is_file(fd)), flush_interval_(flush_interval) {
  for (std::size_t i = 0; i < std::max<std::size_t>(writers, 1); ++i)
    lanes_.push_back(std::make_unique<lane>());
  writer_ = std::thread([this] { run(); });
}

access_log::~access_log() {
  {
    std::lock_guard lock(wake_mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  writer_.join();
}

void access_log::write(std::size_t writer, const access_entry& entry) {
  auto& l = *lanes_[writer % lanes_.size()];
  std::unique_lock lock(l.mutex);
  if (l.pending.size() >= max_pending) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  append_access_line(l.pending, entry, format_, l.stamps);
  l.pending += '\n';
  if (l.pending.size() < flush_bytes || l.woke_writer) return;
  l.woke_writer = true;
  lock.unlock();
  {
    std::lock_guard wake_lock(wake_mutex_);
    wake_asked_ = true;
  }
  wake_.notify_one();
}

void access_log::run() {
  std::vector<std::string> batches(lanes_.size());
  std::unique_lock lock(wake_mutex_);
  for (;;) {
    wake_.wait_for(lock, flush_interval_, [this] { return stopping_ || wake_asked_; });
    wake_asked_ = false;
    const bool last = stopping_;
    lock.unlock();
    flush_all(batches);
    if (last) return;
    lock.lock();
  }
}

void access_log::flush_all(std::vector<std::string>& batches) {
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    auto& l = *lanes_[i];
    std::lock_guard lock(l.mutex);
    batches[i].swap(l.pending);
    l.woke_writer = false;
  }
  for (auto& batch : batches) {
    if (batch.empty()) continue;
    write_batch(batch);
    batch.clear();
    if (batch.capacity() > 4 * flush_bytes) batch.shrink_to_fit();  // after a burst, give it back
  }
}

void access_log::write_batch(const std::string& batch) {
  std::size_t done = 0;
  if (std::chrono::steady_clock::now() >= stuck_until_) {
    done = write_patiently(fd_, batch, fd_is_file_);
    if (done < batch.size()) stuck_until_ = std::chrono::steady_clock::now() + stuck_pause;
  }
  if (done < batch.size()) {
    const auto lost = std::count(batch.begin() + static_cast<std::ptrdiff_t>(done), batch.end(), '\n');
    dropped_.fetch_add(static_cast<std::uint64_t>(lost), std::memory_order_relaxed);
  }
}

// The diagnostic log's sink: writes each formatted line to a file descriptor without ever blocking for
// long (after a stuck write, lines are dropped for a while without waiting).
class fd_sink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit fd_sink(int fd) : fd_(fd), file_(output_is_file(fd)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (std::chrono::steady_clock::now() < stuck_until_) return;
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);  // the pattern ends with a newline
    const std::string_view line(formatted.data(), formatted.size());
    if (write_patiently(fd_, line, file_) < line.size())
      stuck_until_ = std::chrono::steady_clock::now() + stuck_pause;
  }
  void flush_() override {}

 private:
  int fd_;
  bool file_;
  std::chrono::steady_clock::time_point stuck_until_{};
};

namespace {

// %* in a pattern: the message as a JSON string.
class json_message final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    std::string text;
    append_json_string(text, std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<json_message>(); }
};

}  // namespace

namespace {

// The diagnostic log's line format: JSON ({"time","level","message"}) or text ("[time] [level] message").
std::unique_ptr<spdlog::formatter> diagnostic_formatter(log_format format) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  if (format == log_format::json) {
    formatter->add_flag<json_message>('*').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","message":%*})");
  } else {
    formatter->set_pattern("[%Y-%m-%dT%H:%M:%S.%eZ] [%l] %v");
  }
  return formatter;
}

}  // namespace

void setup_diagnostic_log(log_format format, const std::string& level) {
  auto target = std::make_shared<fd_sink>(2);
  // 1,024 lines queued for the writer thread; beyond them the oldest are dropped (a stderr nobody reads
  // must not stall the I/O threads). spdlog builds every slot at once (about 400 bytes each, all
  // resident): 8,192 slots were 3.3 MB of the idle gateway's memory.
  auto pool = std::make_shared<spdlog::details::thread_pool>(1024, 1);
  spdlog::details::registry::instance().set_tp(pool);  // keeps the pool alive with the registry
  auto logger = std::make_shared<spdlog::async_logger>("gateway", target, pool,
                                                       spdlog::async_overflow_policy::overrun_oldest);
  logger->set_formatter(diagnostic_formatter(format));
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(std::move(logger));
}

void print_startup_line(log_format format, std::string_view message) {
  const spdlog::details::log_msg msg("gateway", spdlog::level::info,
                                     spdlog::string_view_t(message.data(), message.size()));
  spdlog::memory_buf_t line;
  diagnostic_formatter(format)->format(msg, line);  // ends with a newline
  write_patiently(1, std::string_view(line.data(), line.size()), output_is_file(1));
}

}  // namespace gateway
