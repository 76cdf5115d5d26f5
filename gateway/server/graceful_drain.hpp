#pragma once
// The graceful drain (first SIGTERM), driven on I/O thread 0:
//   1. at once: the phase moves to draining: /readyz answers 503 while serving goes on;
//   1b. port_handoff_lead before the end of shutdown.drain_delay (at once when the delay is shorter): a
//      listener whose port another process shares (a restart) stops taking new handshakes, so that its
//      close resets none (port_handoff.hpp);
//   2. after shutdown.drain_delay: the phase moves to closing and the listener closes, and the idle
//      connections with it; kept-alive connections answer their next request with "Connection: close";
//   3. once the last connection has gone (checked every 20 ms): stop.
// Whatever still runs shutdown.timeout after the signal is cancelled: stop. Beast-free.

#include "gateway/config/config.hpp"
#include "gateway/server/server_state.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>

namespace gateway {

class graceful_drain {
 public:
  // How long before its close a listener sharing its port stops taking handshakes: long enough for the
  // handshakes already begun to complete (one round trip), well below the 1 s after which a client sends
  // a dropped SYN again (then to the listener that stays).
  static constexpr std::chrono::milliseconds port_handoff_lead{100};

  // `hand_off_ports` is step 1b, `close_listener` step 2 (both called on `ioc`'s thread); `stop` is the
  // server's stop(). They, `settings` and `state` outlive this.
  graceful_drain(boost::asio::io_context& ioc, const shutdown_settings& settings, server_state& state,
                 std::function<void()> hand_off_ports, std::function<void()> close_listener,
                 std::function<void()> stop);

  // Starts the drain. Thread-safe and idempotent; does nothing once the server is stopping.
  void begin();
  // Cancels the drain's timers (stop() does); on `ioc`'s thread.
  void cancel();

 private:
  void close_listener();
  void wait_for_connections();

  boost::asio::io_context& ioc_;
  const shutdown_settings& settings_;
  server_state& state_;
  std::function<void()> hand_off_ports_;
  std::function<void()> close_listener_;
  std::function<void()> stop_;
  boost::asio::steady_timer drain_timer_;     // the hand-off, the close, then the connection count checks
  boost::asio::steady_timer shutdown_timer_;  // shutdown.timeout from the signal
};

}  // namespace gateway
