#include "gateway/server/session_registry.hpp"

#include <sys/ioctl.h>

namespace gateway {

using boost::system::error_code;

void session_registry::close_idle(bool fresh_too) {
  walking_ = true;
  for (auto& e : entries_) {
    if (!e.idle || (e.fresh && !fresh_too)) continue;
    int pending = 0;
    if (::ioctl(e.socket->native_handle(), FIONREAD, &pending) == 0 && pending > 0) continue;
    error_code ignored;
    e.socket->cancel(ignored);
  }
  walking_ = false;
}

void session_registry::close_all() {
  walking_ = true;
  for (auto& e : entries_) {
    if (e.control) e.control->cancel(cancel_reason::shutdown);
    error_code ignored;
    e.socket->shutdown(boost::asio::ip::tcp::socket::shutdown_receive, ignored);
    e.socket->cancel(ignored);
  }
  walking_ = false;
}

}  // namespace gateway
