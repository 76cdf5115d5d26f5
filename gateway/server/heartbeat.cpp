#include "gateway/server/heartbeat.hpp"

#include <boost/asio/spawn.hpp>

namespace gateway {

namespace net = boost::asio;
using boost::system::error_code;

namespace {
constexpr auto period = std::chrono::milliseconds(100);
}  // namespace

void heartbeat::start(thread_metrics& metrics, const server_state& state) {
  net::spawn(
      timer_.get_executor(),
      [this, &metrics, &state](net::yield_context yield) {
        while (!state.stopping()) {
          const auto due = clock::now() + period;
          timer_.expires_at(due);
          error_code ec;
          timer_.async_wait(yield[ec]);
          if (state.stopping()) break;
          const auto now = clock::now();
          metrics.loop_lag(now - due);
          last_beat_.store(now.time_since_epoch().count(), std::memory_order_relaxed);
        }
      },
      [](std::exception_ptr) {});
}

}  // namespace gateway
