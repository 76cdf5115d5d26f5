#pragma once
// One client connection: a flat loop in one stackful coroutine on one I/O thread (the io_context of that
// thread is single-threaded, so the connection is implicitly on its own strand). Read a request under
// the idle/header timeouts and size limits, answer it, repeat while keep-alive. Malformed HTTP gets a
// 400 and the connection closed. While a request is being handled, the client closing the connection
// cancels all of its downstream calls and nothing is written.

#include "gateway/config/config.hpp"
#include "gateway/observe/logging.hpp"
#include "gateway/observe/metrics.hpp"
#include "gateway/server/request_handler.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <atomic>
#include <cassert>
#include <list>

namespace gateway {

// The open connections of one I/O thread, so that shutdown can close them. Single-threaded.
class session_registry {
 public:
  struct entry {
    boost::asio::ip::tcp::socket* socket = nullptr;
    request_control* control = nullptr;
    bool idle = false;  // waiting for the first byte of a request
  };
  // Keeps a connection listed for as long as it lives (also when its coroutine unwinds).
  class membership {
   public:
    membership(session_registry& r, entry e) : registry_(r), it_(r.entries_.insert(r.entries_.end(), e)) {}
    membership(const membership&) = delete;
    membership& operator=(const membership&) = delete;
    ~membership() {
      assert(!registry_.walking_ && "a connection ended inside the registry's own loop");
      registry_.entries_.erase(it_);
    }
    void set_idle(bool idle) { it_->idle = idle; }

   private:
    session_registry& registry_;
    std::list<entry>::iterator it_;
  };

  // Cancels every request and closes every connection (shutdown). Neither loop resumes a connection's
  // coroutine (cancels and socket cancels complete later, from the queue), so no entry ends under them.
  void close_all();
  // Closes the connections waiting for a request, unless a request has already started to arrive.
  void close_idle();

 private:
  std::list<entry> entries_;
  bool walking_ = false;  // inside close_all() / close_idle()
};

// What all connections share, across I/O threads.
struct server_state {
  std::atomic<std::size_t> inflight{0};     // requests being handled
  std::atomic<std::size_t> connections{0};  // open client connections
  std::atomic<bool> closing{false};         // the listener has closed: finish up, keep nothing alive
};

struct session_context {
  const request_handler* handler = nullptr;
  const gateway_config* config = nullptr;
  session_registry* registry = nullptr;
  server_state* state = nullptr;
  worker_metrics* metrics = nullptr;
  access_log* log = nullptr;  // null when access logging is off
  std::size_t worker = 0;
};

void run_session(boost::asio::ip::tcp::socket socket, const session_context& ctx,
                 boost::asio::yield_context yield);

}  // namespace gateway
