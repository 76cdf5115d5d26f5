#include "gateway/server/port_handoff.hpp"

#include <linux/filter.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace gateway::port_handoff {

namespace {

// A socket's local address and port as the kernel's socket table writes them: each 32-bit word of the
// address in hex as it lies in memory, then the port (e.g. 127.0.0.1:8080 is "0100007F:1F90").
std::string table_address(const sockaddr_storage& local) {
  char text[48];
  if (local.ss_family == AF_INET) {
    const auto& in4 = reinterpret_cast<const sockaddr_in&>(local);
    std::snprintf(text, sizeof text, "%08X:%04X", in4.sin_addr.s_addr, ntohs(in4.sin_port));
  } else {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(local);
    const auto* w = in6.sin6_addr.s6_addr32;
    std::snprintf(text, sizeof text, "%08X%08X%08X%08X:%04X", w[0], w[1], w[2], w[3], ntohs(in6.sin6_port));
  }
  return text;
}

}  // namespace

bool shared(int listen_fd) {
  sockaddr_storage local{};
  socklen_t size = sizeof local;
  struct stat own {};
  if (listen_fd < 0 || ::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&local), &size) != 0 ||
      (local.ss_family != AF_INET && local.ss_family != AF_INET6) || ::fstat(listen_fd, &own) != 0)
    return false;
  const auto address = table_address(local);
  const auto own_inode = std::to_string(own.st_ino);
  std::ifstream table(local.ss_family == AF_INET ? "/proc/net/tcp" : "/proc/net/tcp6");
  std::string line;
  std::getline(table, line);  // the column names
  // Each line: sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
  // The listening sockets come first (state 0A); the first other line ends them.
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local_address, remote, state, queues, timer, retransmits, uid, timeout, inode;
    fields >> slot >> local_address >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >>
        inode;
    if (!fields || state != "0A") return false;
    if (local_address == address && inode != own_inode) return true;
  }
  return false;
}

bool refuse_new_handshakes(int listen_fd) {
  // A socket filter sees a TCP segment from its TCP header on: byte 13 holds the flags. A SYN without ACK
  // (a new handshake) is dropped; everything else is kept whole.
  static sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 13),
      BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x12),        // SYN | ACK
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x02, 0, 1),  // SYN alone?
      BPF_STMT(BPF_RET | BPF_K, 0),                     // drop
      BPF_STMT(BPF_RET | BPF_K, 0xffffffffU),           // keep
  };
  const sock_fprog program{static_cast<unsigned short>(sizeof code / sizeof code[0]), code};
  return ::setsockopt(listen_fd, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof program) == 0;
}

bool hand_off(int listen_fd) {
  return shared(listen_fd) && refuse_new_handshakes(listen_fd);
}

}  // namespace gateway::port_handoff
