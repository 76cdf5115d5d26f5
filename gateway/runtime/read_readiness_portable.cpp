// read_readiness's portable path: public Asio API only, `async_wait(wait_read)` (see read_readiness_path.hpp
// for when it is built). Each wait re-arms the descriptor (`epoll_ctl` on Linux), so input already waiting
// when the wait is queued is reported too.

#include "gateway/runtime/read_readiness_path.hpp"

#if !GATEWAY_READINESS_EPOLL

#include "gateway/runtime/read_readiness.hpp"

#include <utility>

namespace gateway {

namespace net = boost::asio;
using boost::system::error_code;

// The wait's state. Owned by read_readiness; once orphaned (its owner destroyed while the wait is queued)
// by the queued wait's handler, which frees it when Asio runs it (aborted: the socket was closed) or
// destroys it without running it (the io_context shutting down).
struct read_readiness::state {
  listener* target = nullptr;
  bool queued = false;
  bool orphaned = false;

  // Ends the wait: frees an orphaned state (returning null), else returns the listener to tell.
  listener* end() {
    queued = false;
    if (orphaned) {
      delete this;
      return nullptr;
    }
    return std::exchange(target, nullptr);
  }

  // The completion handler of `async_wait`: move-only, it ends the wait exactly once, when run or, if
  // never run, when destroyed.
  class handler {
   public:
    explicit handler(state* s) noexcept : state_(s) {}
    handler(handler&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
    handler& operator=(handler&&) = delete;
    ~handler() {
      if (state_ != nullptr) state_->end();  // dropped unrun: nobody is told
    }

    void operator()(const error_code& ec) {
      // Last: the listener may destroy the owner, and with it (not orphaned) the state.
      if (listener* l = std::exchange(state_, nullptr)->end()) l->on_readable(ec);
    }

   private:
    state* state_;
  };
};

read_readiness::read_readiness(net::ip::tcp::socket& socket) : socket_(socket), state_(new state) {}

read_readiness::~read_readiness() {
  if (state_->queued) {
    state_->orphaned = true;  // the socket is closed: the queued handler runs aborted, or is dropped
  } else {
    delete state_;
  }
}

bool read_readiness::reports_waiting_input() {
  return true;
}

bool read_readiness::waiting() const {
  return state_->queued;
}

void read_readiness::wait(listener& l) {
  state_->target = &l;
  state_->queued = true;
  socket_.async_wait(net::ip::tcp::socket::wait_read, state::handler(state_));
}

}  // namespace gateway

#endif  // !GATEWAY_READINESS_EPOLL
