#include "gateway/core/read_readiness.hpp"

#include <boost/asio/detail/epoll_reactor.hpp>
#include <boost/asio/detail/reactor.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>
#include <boost/version.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <type_traits>
#include <utility>

static_assert(BOOST_VERSION / 100 == 1081, "read_readiness relies on Asio 1.81's reactor: review it first");
static_assert(std::is_same_v<boost::asio::detail::reactor, boost::asio::detail::epoll_reactor>,
              "read_readiness needs Asio's epoll reactor");

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
// and it declines that first, speculative attempt.
struct read_readiness::op final : net::detail::reactor_op {
  explicit op(epoll_reactor& r) : reactor_op(error_code(), &do_perform, &do_complete), reactor(r) {}

  static status do_perform(reactor_op* base) { return static_cast<op*>(base)->starting ? not_done : done; }

  static void do_complete(void* owner, net::detail::operation* base, const error_code&, std::size_t) {
    auto* o = static_cast<op*>(base);
    o->queued = false;
    if (o->orphaned) {
      delete o;
      return;
    }
    if (owner == nullptr) return;  // the io_context is shutting down: read_readiness frees it
    listener* target = std::exchange(o->target, nullptr);
    const error_code ec = o->ec_;  // the listener may free the operation (by destroying its owner)
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
      op_(new op(
          net::use_service<epoll_reactor>(net::query(socket.get_executor(), net::execution::context)))) {}

read_readiness::~read_readiness() {
  if (op_->queued) {
    op_->orphaned = true;  // completes (aborted) when the socket closes; frees itself then
  } else {
    delete op_;
  }
}

bool read_readiness::waiting() const {
  return op_->queued;
}

void read_readiness::wait(listener& l) {
  op_->target = &l;
  op_->ec_ = error_code();
  op_->queued = true;
  op_->starting = true;
  auto& impl = socket_access::implementation(socket_);
  op_->reactor.start_op(epoll_reactor::read_op, impl.socket_, impl.reactor_data_, op_, true, true);
  op_->starting = false;
}

bool report_input_left(net::ip::tcp::socket& socket) {
  const int on = 1;
  return ::setsockopt(socket.native_handle(), IPPROTO_TCP, TCP_INQ, &on, sizeof on) == 0;
}

socket_read read_now(net::ip::tcp::socket& socket, boost::beast::flat_buffer& buffer, std::size_t min_room) {
  socket_read r;
  const auto room = std::min(std::clamp<std::size_t>(buffer.capacity() - buffer.size(), min_room, 65536),
                             buffer.max_size() - buffer.size());
  if (room == 0) {
    r.ec = net::error::no_buffer_space;
    return r;
  }
  const auto space = buffer.prepare(room);
  iovec iov{space.data(), space.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  ssize_t n = 0;
  do {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    n = ::recvmsg(socket.native_handle(), &msg, MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n > 0) {
    buffer.commit(static_cast<std::size_t>(n));
    r.bytes = static_cast<std::size_t>(n);
    r.drained = r.bytes < space.size();
    for (auto* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == IPPROTO_TCP && c->cmsg_type == TCP_CM_INQ) {
        int left = 0;
        std::memcpy(&left, CMSG_DATA(c), sizeof left);
        r.drained = left == 0;
      }
    }
  } else if (n == 0) {
    r.ec = net::error::eof;
  } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
    r.ec = net::error::would_block;
    r.drained = true;
  } else {
    r.ec = error_code(errno, boost::system::system_category());
  }
  return r;
}

}  // namespace gateway
