// What a system call costs on this machine: nanoseconds per call for getppid, a recv that finds nothing
// (EAGAIN) on a loopback TCP socket, an epoll_ctl re-arm, and a 160-byte send + recv over loopback TCP,
// the recv also as the `recvmsg` that reports what is left to read (TCP_INQ), as the gateway reads.
// usage: probe-syscalls
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace {

template <class Fn>
double ns_per_call(int n, Fn fn) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) fn();
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / n;
}

}  // namespace

int main() {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("listen");
    return 1;
  }
  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::perror("connect");
    return 1;
  }
  const int server = ::accept(listener, nullptr, nullptr);
  ::fcntl(client, F_SETFL, O_NONBLOCK);
  ::fcntl(server, F_SETFL, O_NONBLOCK);
  char buf[512] = {};
  const int ep = ::epoll_create1(0);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  ::epoll_ctl(ep, EPOLL_CTL_ADD, client, &ev);

  std::printf("getppid:                     %6.0f ns\n", ns_per_call(200000, [] { ::getppid(); }));
  std::printf("recv finding nothing (TCP):  %6.0f ns\n",
              ns_per_call(200000, [&] { ::recv(client, buf, sizeof buf, 0); }));
  std::printf("epoll_ctl MOD:               %6.0f ns\n",
              ns_per_call(200000, [&] { ::epoll_ctl(ep, EPOLL_CTL_MOD, client, &ev); }));
  std::printf("send 160 B + recv (loopback): %5.0f ns\n", ns_per_call(50000, [&] {
                ::send(server, buf, 160, 0);
                ::recv(client, buf, sizeof buf, 0);
              }));
  const int on = 1;
  ::setsockopt(client, IPPROTO_TCP, TCP_INQ, &on, sizeof on);
  iovec iov{buf, sizeof buf};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::printf("send 160 B + recvmsg, TCP_INQ: %3.0f ns\n", ns_per_call(50000, [&] {
                ::send(server, buf, 160, 0);
                msg.msg_control = control;
                msg.msg_controllen = sizeof control;
                ::recvmsg(client, &msg, 0);
              }));
  return 0;
}
