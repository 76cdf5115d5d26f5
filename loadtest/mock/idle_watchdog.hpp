#pragma once
// Cancels the pending operations of a socket that made no progress for `timeout`, without a timer
// operation per read or write: the owner moves the deadline with touch() (a clock read and a store) and
// one timer wakes up at most about once per timeout. suspend() lifts the deadline, e.g. while the owner
// waits on purpose. Must be used and destroyed on the socket's executor, and destroyed before the socket.

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <memory>

namespace mock {

class idle_watchdog {
 public:
  using clock = std::chrono::steady_clock;

  idle_watchdog(boost::asio::ip::tcp::socket& socket, clock::duration timeout);
  idle_watchdog(const idle_watchdog&) = delete;
  idle_watchdog& operator=(const idle_watchdog&) = delete;
  ~idle_watchdog();

  void touch() { state_->deadline = clock::now() + state_->timeout; }
  void suspend() { state_->deadline = clock::time_point::max(); }
  // True once the watchdog has cancelled the socket's operations.
  bool expired() const { return state_->expired; }

 private:
  // Shared with the pending timer handler, which may run after the watchdog is gone.
  struct state {
    state(boost::asio::ip::tcp::socket& s, clock::duration t)
        : socket(&s), timeout(t), timer(s.get_executor()) {}
    boost::asio::ip::tcp::socket* socket;  // null once the watchdog is destroyed
    clock::duration timeout;
    clock::time_point deadline = clock::time_point::max();
    bool expired = false;
    boost::asio::steady_timer timer;
  };
  static void arm(const std::shared_ptr<state>& st);

  std::shared_ptr<state> state_;
};

}  // namespace mock
