#pragma once
// Notices a client closing its connection while the server is busy with its request (not reading).
// It waits for the socket to become readable and peeks: end-of-stream or a reset means the peer is gone
// and `on_close` runs once on the socket's executor; bytes (a pipelined request) end the watch quietly.
// Must be started, stopped and destroyed on the socket's executor.

#include <boost/asio/ip/tcp.hpp>

#include <functional>
#include <memory>

namespace mock {

class peer_watch {
 public:
  explicit peer_watch(boost::asio::ip::tcp::socket& socket) : socket_(socket) {}
  peer_watch(const peer_watch&) = delete;
  peer_watch& operator=(const peer_watch&) = delete;
  ~peer_watch() { stop(); }

  void start(std::function<void()> on_close);
  // After stop() `on_close` is never called. Cancels the pending wait on the socket.
  void stop();
  bool peer_closed() const { return state_ && state_->closed; }

 private:
  struct state {
    bool active = false;
    bool closed = false;
    std::function<void()> on_close;
  };
  static void arm(boost::asio::ip::tcp::socket& socket, std::shared_ptr<state> st);

  boost::asio::ip::tcp::socket& socket_;
  std::shared_ptr<state> state_;
};

}  // namespace mock
