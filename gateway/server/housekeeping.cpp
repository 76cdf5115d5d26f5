#include "gateway/server/housekeeping.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace gateway {
namespace {

constexpr int tick_ms = 500;
constexpr auto settle = std::chrono::milliseconds(100);

}  // namespace

housekeeping::housekeeping(const std::string& path, bool watch, std::function<void()> changed,
                           std::function<void()> tick)
    : changed_(std::move(changed)), tick_(std::move(tick)) {
  const auto slash = path.rfind('/');
  const std::string directory = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  name_ = slash == std::string::npos ? path : path.substr(slash + 1);
  stop_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_ < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
  if (watch) {
    inotify_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (inotify_ < 0 ||
        ::inotify_add_watch(inotify_, directory.c_str(),
                            IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_ATTRIB) < 0) {
      const int error = errno;
      if (inotify_ >= 0) ::close(inotify_);
      ::close(stop_);
      throw std::runtime_error("cannot watch " + directory + " for configuration changes: " +
                               std::strerror(error) + " (set server.watch_config: false to do without)");
    }
  }
  thread_ = std::thread([this] { run(); });
}

housekeeping::~housekeeping() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(stop_, &one, sizeof one);
  thread_.join();
  if (inotify_ >= 0) ::close(inotify_);
  ::close(stop_);
}

void housekeeping::run() {
  using clock = std::chrono::steady_clock;
  bool pending = false;
  clock::time_point due{};
  std::array<pollfd, 2> fds{pollfd{stop_, POLLIN, 0}, pollfd{inotify_, POLLIN, 0}};
  for (;;) {
    int timeout = tick_ms;
    if (pending) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(due - clock::now()).count();
      timeout = static_cast<int>(std::max<long long>(0, std::min<long long>(left, tick_ms)));
    }
    const int ready = ::poll(fds.data(), inotify_ >= 0 ? 2 : 1, timeout);
    if (ready < 0 && errno != EINTR) {
      spdlog::error("configuration watch stopped: poll: {}", std::strerror(errno));
      return;
    }
    if (fds[0].revents != 0) return;
    if (inotify_ >= 0 && (fds[1].revents & POLLIN) != 0) {
      alignas(inotify_event) std::array<char, 16 * 1024> buffer;
      for (;;) {
        const auto n = ::read(inotify_, buffer.data(), buffer.size());
        if (n <= 0) break;
        for (ssize_t at = 0; at < n;) {
          const auto* event = reinterpret_cast<const inotify_event*>(buffer.data() + at);
          const std::string_view name = event->len > 0 ? std::string_view(event->name) : std::string_view();
          // The file itself, or the symlink a ConfigMap volume swaps under it.
          if (name == name_ || name == "..data" || (event->mask & IN_Q_OVERFLOW) != 0) {
            pending = true;
            due = clock::now() + settle;
          }
          at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
        }
      }
    }
    if (pending && clock::now() >= due) {
      pending = false;
      try {
        changed_();
      } catch (const std::exception& e) {
        spdlog::error("configuration reload failed: {}", e.what());
      }
    }
    try {
      tick_();
    } catch (const std::exception& e) {
      spdlog::error("configuration housekeeping failed: {}", e.what());
    }
  }
}

}  // namespace gateway
