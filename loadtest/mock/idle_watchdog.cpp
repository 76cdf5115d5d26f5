#include "loadtest/mock/idle_watchdog.hpp"

namespace mock {

idle_watchdog::idle_watchdog(boost::asio::ip::tcp::socket& socket, clock::duration timeout)
    : state_(std::make_shared<state>(socket, timeout)) {
  touch();
  arm(state_);
}

idle_watchdog::~idle_watchdog() {
  state_->socket = nullptr;
  state_->timer.cancel();
}

void idle_watchdog::arm(const std::shared_ptr<state>& st) {
  const auto now = clock::now();
  st->timer.expires_at(st->deadline == clock::time_point::max() ? now + st->timeout : st->deadline);
  st->timer.async_wait([st](const boost::system::error_code&) {
    // Checking `socket` (not the error code) also covers a wake-up already queued when the owner died.
    if (!st->socket) return;
    if (clock::now() < st->deadline) {
      arm(st);
      return;
    }
    st->expired = true;
    boost::system::error_code ignored;
    st->socket->cancel(ignored);
  });
}

}  // namespace mock
