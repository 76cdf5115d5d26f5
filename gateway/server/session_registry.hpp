#pragma once
// The open connections of one I/O thread, so that the drain and shutdown can reach them. Single-threaded:
// used on that I/O thread only.

#include "gateway/server/request_handler.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <cassert>
#include <list>

namespace gateway {

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

}  // namespace gateway
