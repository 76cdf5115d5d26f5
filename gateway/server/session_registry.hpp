#pragma once
// The open connections of one I/O thread, so that the drain and shutdown can reach them. Single-threaded:
// used on that I/O thread only.

#include "gateway/server/request_handler.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <cassert>
#include <chrono>
#include <list>

namespace gateway {

// While the gateway drains, a connection waiting for a request gets this long more: a kept-alive one for
// one more request, a new one for its first.
constexpr auto drain_idle_grace = std::chrono::milliseconds(500);

class session_registry {
 public:
  struct entry {
    boost::asio::ip::tcp::socket* socket = nullptr;
    request_control* control = nullptr;
    bool idle = false;  // waiting for the first byte of a request
    bool fresh = true;  // no request read on it yet
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
    void set_fresh(bool fresh) { it_->fresh = fresh; }

   private:
    session_registry& registry_;
    std::list<entry>::iterator it_;
  };

  // Cancels every request and closes every connection (shutdown). Neither loop resumes a connection's
  // coroutine (cancels and socket cancels complete later, from the queue), so no entry ends under them.
  void close_all();
  // Closes the connections waiting for a request, unless a request has already started to arrive; with
  // `fresh_too` false, not those still waiting for their first request either. The drain closes the
  // kept-alive ones at once, the new ones drain_idle_grace later: a client that connected just before the
  // listener closed (in a restart, it cannot know) has sent its first request by then, and is owed it.
  void close_idle(bool fresh_too);

 private:
  std::list<entry> entries_;
  bool walking_ = false;  // inside close_all() / close_idle()
};

}  // namespace gateway
