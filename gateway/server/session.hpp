#pragma once
// One client connection: a flat loop in one stackful coroutine on one I/O thread (the io_context of that
// thread is single-threaded, so the connection is implicitly on its own strand). Read a request under
// the idle/header timeouts and size limits, answer it, repeat while keep-alive. Malformed HTTP gets a
// 400 and the connection closed. While a request is being handled, the client closing the connection
// cancels all of its downstream calls and nothing is written.

#include "gateway/config/config.hpp"
#include "gateway/server/request_handler.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <list>

namespace gateway {

// The open connections of one I/O thread, so that shutdown can close them. Single-threaded.
class session_registry {
 public:
  struct entry {
    boost::asio::ip::tcp::socket* socket = nullptr;
    request_control* control = nullptr;
  };
  // Keeps a connection listed for as long as it lives (also when its coroutine unwinds).
  class membership {
   public:
    membership(session_registry& r, entry e) : registry_(r), it_(r.entries_.insert(r.entries_.end(), e)) {}
    membership(const membership&) = delete;
    membership& operator=(const membership&) = delete;
    ~membership() { registry_.entries_.erase(it_); }

   private:
    session_registry& registry_;
    std::list<entry>::iterator it_;
  };

  void close_all();

 private:
  std::list<entry> entries_;
};

struct session_context {
  const request_handler* handler = nullptr;
  const limits_settings* limits = nullptr;
  session_registry* registry = nullptr;
  std::size_t worker = 0;
};

void run_session(boost::asio::ip::tcp::socket socket, const session_context& ctx,
                 boost::asio::yield_context yield);

}  // namespace gateway
