#include "loadtest/mock/peer_watch.hpp"

#include <sys/socket.h>

#include <cerrno>

namespace mock {

void peer_watch::start(std::function<void()> on_close) {
  if (state_ && state_->active) return;
  state_ = std::make_shared<state>();
  state_->active = true;
  state_->on_close = std::move(on_close);
  arm(socket_, state_);
}

void peer_watch::stop() {
  if (!state_ || !state_->active) return;
  state_->active = false;
  state_->on_close = nullptr;
  boost::system::error_code ignored;
  socket_.cancel(ignored);
}

void peer_watch::arm(boost::asio::ip::tcp::socket& socket, std::shared_ptr<state> st) {
  // The handler touches the socket only while the watch is active; stop() runs before the socket dies.
  socket.async_wait(boost::asio::ip::tcp::socket::wait_read,
                    [&socket, st](const boost::system::error_code& ec) {
                      if (!st->active || ec) return;
                      char byte = 0;
                      const auto n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
                      if (n > 0) {
                        st->active = false;  // a pipelined request: the peer is still there
                        return;
                      }
                      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
                        arm(socket, st);
                        return;
                      }
                      st->active = false;
                      st->closed = true;
                      if (auto cb = std::move(st->on_close)) cb();
                    });
}

}  // namespace mock
