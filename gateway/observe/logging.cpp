#include "gateway/observe/logging.hpp"

#include "gateway/aggregate/degraded_list.hpp"
#include "gateway/core/json_text.hpp"

#include <poll.h>
#include <spdlog/async.h>
#include <spdlog/async_logger.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <ctime>
#include <mutex>

namespace gateway {

namespace {

constexpr auto write_patience = std::chrono::milliseconds(100);  // per line, when the fd is not writable
constexpr auto stuck_pause = std::chrono::seconds(1);            // after a stuck write, drop without waiting

void append_time(std::string& out, std::chrono::system_clock::time_point t) {
  const auto since = t.time_since_epoch();
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since - seconds).count();
  const std::time_t tt = static_cast<std::time_t>(seconds.count());
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  char buffer[40];
  const auto n = std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", &tm);
  out.append(buffer, n);
  std::snprintf(buffer, sizeof buffer, ".%03dZ", static_cast<int>(millis));
  out += buffer;
}

}  // namespace

std::string format_access_line(const access_entry& e, log_format format) {
  std::string line;
  line.reserve(256);
  char duration[32];
  std::snprintf(duration, sizeof duration, "%.3f", e.duration_ms);
  if (format == log_format::json) {
    line += "{\"time\":\"";
    append_time(line, e.time);
    line += "\",\"request_id\":";
    append_json_string(line, e.request_id);
    line += ",\"method\":";
    append_json_string(line, e.method);
    line += ",\"route\":";
    append_json_string(line, e.route);
    line += ",\"status\":" + std::to_string(e.status);
    line += ",\"duration_ms\":";
    line += duration;
    line += ",\"degraded\":[";
    bool first = true;
    for_each_degraded(e.degraded, [&](std::string_view name, std::string_view) {
      if (!first) line += ',';
      first = false;
      append_json_string(line, name);
    });
    line += "],\"bytes\":" + std::to_string(e.bytes);
    line += ",\"client\":";
    append_json_string(line, e.client);
    line += '}';
  } else {
    append_time(line, e.time);
    line.append(" ").append(e.request_id.empty() ? "-" : e.request_id);
    line.append(" ").append(e.method).append(" ").append(e.route);
    line.append(" ").append(std::to_string(e.status)).append(" ").append(duration).append("ms");
    line.append(" degraded=").append(e.degraded.empty() ? "-" : degraded_names(e.degraded));
    line.append(" bytes=").append(std::to_string(e.bytes));
    line.append(" client=").append(e.client);
  }
  return line;
}

// Writes formatted lines to a file descriptor without ever blocking for long.
class fd_sink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit fd_sink(int fd) : fd_(fd) {}
  std::atomic<std::uint64_t> dropped{0};

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const auto now = std::chrono::steady_clock::now();
    if (now < stuck_until_) {
      dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);  // the pattern ends with a newline
    line_.assign(formatted.data(), formatted.size());
    std::size_t done = 0;
    while (done < line_.size()) {
      pollfd p{fd_, POLLOUT, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(write_patience.count()));
      if (ready <= 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL))) {
        if (ready < 0 && errno == EINTR) continue;
        stuck_until_ = std::chrono::steady_clock::now() + stuck_pause;
        break;
      }
      const auto n = ::write(fd_, line_.data() + done, line_.size() - done);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {  // ENOSPC, EPIPE, EBADF...: drop and try again later
        stuck_until_ = std::chrono::steady_clock::now() + stuck_pause;
        break;
      }
      done += static_cast<std::size_t>(n);
    }
    if (done < line_.size()) dropped.fetch_add(1, std::memory_order_relaxed);
  }
  void flush_() override {}

 private:
  int fd_;
  std::string line_;
  std::chrono::steady_clock::time_point stuck_until_{};
};

access_log::access_log(log_format format, int fd) : format_(format), sink_(std::make_shared<fd_sink>(fd)) {
  pool_ = std::make_shared<spdlog::details::thread_pool>(8192, 1);
  logger_ = std::make_shared<spdlog::async_logger>("access", sink_, pool_,
                                                   spdlog::async_overflow_policy::overrun_oldest);
  logger_->set_pattern("%v", spdlog::pattern_time_type::utc);
  logger_->set_level(spdlog::level::info);
}

access_log::~access_log() = default;

void access_log::write(const access_entry& entry) {
  logger_->info(format_access_line(entry, format_));
}

std::uint64_t access_log::dropped() const {
  return sink_->dropped.load(std::memory_order_relaxed);
}

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

void setup_diagnostic_log(log_format format, const std::string& level) {
  auto target = std::make_shared<fd_sink>(2);
  auto pool = std::make_shared<spdlog::details::thread_pool>(8192, 1);
  spdlog::details::registry::instance().set_tp(pool);  // keeps the pool alive with the registry
  auto logger = std::make_shared<spdlog::async_logger>("gateway", target, pool,
                                                       spdlog::async_overflow_policy::overrun_oldest);
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  if (format == log_format::json) {
    formatter->add_flag<json_message>('*').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","message":%*})");
  } else {
    formatter->set_pattern("[%Y-%m-%dT%H:%M:%S.%eZ] [%l] %v");
  }
  logger->set_formatter(std::move(formatter));
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace gateway
