#pragma once
// An I/O thread notes the time every 100 ms and how late its timer fired: a thread that stops noting is
// stuck (/livez), a late timer means something blocked it (the loop-lag histogram). Beast-free.

#include "gateway/observe/metrics.hpp"
#include "gateway/runtime/duration.hpp"
#include "gateway/server/server_state.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>

namespace gateway {

class heartbeat {
 public:
  explicit heartbeat(boost::asio::io_context& ioc) : timer_(ioc) {}

  // Spawns the beating coroutine on the timer's I/O thread; it ends once the phase has reached stopping
  // and the timer is cancelled (stop()).
  void start(thread_metrics& metrics, const server_state& state);
  void stop() { timer_.cancel(); }  // on the timer's I/O thread

  // The last beat; read from any thread.
  clock::time_point last() const {
    return clock::time_point(clock::duration(last_beat_.load(std::memory_order_relaxed)));
  }

 private:
  boost::asio::steady_timer timer_;
  std::atomic<clock::rep> last_beat_{clock::now().time_since_epoch().count()};
};

}  // namespace gateway
