// read_readiness's fast path: a reactor operation of Asio 1.81's epoll reactor (see read_readiness_path.hpp
// for when it is built).

#include "gateway/runtime/read_readiness_path.hpp"

#if GATEWAY_READINESS_EPOLL

#include "gateway/runtime/read_readiness.hpp"

#include <boost/asio/detail/epoll_reactor.hpp>
#include <boost/asio/detail/reactor.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>

#include <type_traits>
#include <utility>

static_assert(std::is_same_v<boost::asio::detail::reactor, boost::asio::detail::epoll_reactor>,
              "read_readiness_path.hpp chose the epoll path for a build whose reactor is not epoll");

namespace gateway {

namespace net = boost::asio;
using boost::system::error_code;
using net::detail::epoll_reactor;

namespace {

// The socket's descriptor and reactor registration (protected in basic_socket).
struct socket_access : net::ip::tcp::socket {
  static auto& implementation(net::ip::tcp::socket& s) {
    return (s.*(&socket_access::impl_)).get_implementation();
  }
};

}  // namespace

// A reactor operation that never reads: it is done as soon as epoll reports the socket readable (or in
// error). Started with speculation allowed so that start_op queues it without touching the descriptor,
// and it declines that first, speculative attempt. Owned by read_readiness; once orphaned (its owner
// destroyed while it is queued) it frees itself when Asio completes it.
struct read_readiness::state final : net::detail::reactor_op {
  explicit state(epoll_reactor& r) : reactor_op(error_code(), &do_perform, &do_complete), reactor(r) {}

  static status do_perform(reactor_op* base) { return static_cast<state*>(base)->starting ? not_done : done; }

  static void do_complete(void* owner, net::detail::operation* base, const error_code&, std::size_t) {
    auto* s = static_cast<state*>(base);
    s->queued = false;
    if (s->orphaned) {
      delete s;
      return;
    }
    if (owner == nullptr) return;  // the io_context is shutting down: read_readiness frees it
    listener* target = std::exchange(s->target, nullptr);
    const error_code ec = s->ec_;  // the listener may free the operation (by destroying its owner)
    target->on_readable(ec);
  }

  epoll_reactor& reactor;
  listener* target = nullptr;
  bool starting = false;
  bool queued = false;
  bool orphaned = false;
};

read_readiness::read_readiness(net::ip::tcp::socket& socket)
    : socket_(socket),
      state_(new state(
          net::use_service<epoll_reactor>(net::query(socket.get_executor(), net::execution::context)))) {}

read_readiness::~read_readiness() {
  if (state_->queued) {
    state_->orphaned = true;  // completes (aborted) when the socket closes; frees itself then
  } else {
    delete state_;
  }
}

bool read_readiness::reports_waiting_input() {
  return false;
}

bool read_readiness::waiting() const {
  return state_->queued;
}

void read_readiness::wait(listener& l) {
  state_->target = &l;
  state_->ec_ = error_code();
  state_->queued = true;
  state_->starting = true;
  auto& impl = socket_access::implementation(socket_);
  state_->reactor.start_op(epoll_reactor::read_op, impl.socket_, impl.reactor_data_, state_, true, true);
  state_->starting = false;
}

}  // namespace gateway

#endif  // GATEWAY_READINESS_EPOLL
