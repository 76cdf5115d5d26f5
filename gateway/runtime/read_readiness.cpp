// What both paths of read_readiness share (the paths: read_readiness_epoll.cpp and
// read_readiness_portable.cpp): the socket option and the read an owner does after a wake-up.

#include "gateway/runtime/read_readiness.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace gateway {

namespace net = boost::asio;
using boost::system::error_code;

bool report_input_left(net::ip::tcp::socket& socket) {
#if defined(TCP_INQ)
  const int on = 1;
  return ::setsockopt(socket.native_handle(), IPPROTO_TCP, TCP_INQ, &on, sizeof on) == 0;
#else
  (void)socket;
  return false;  // not Linux: read_now treats a short read as drained
#endif
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
#if defined(TCP_CM_INQ)
    for (auto* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == IPPROTO_TCP && c->cmsg_type == TCP_CM_INQ) {
        int left = 0;
        std::memcpy(&left, CMSG_DATA(c), sizeof left);
        r.drained = left == 0;
      }
    }
#endif
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
