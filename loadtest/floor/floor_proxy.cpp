// floor-proxy: the floor. The same seven exchanges per request as the gateway's a100 scenario (one client
// request and answer, six downstream calls to the mock), on raw epoll, with minimal parsing. It measures
// what the kernel and the exchanges cost on this machine, not a product: run it where the gateway runs in
// the benchmark and its CPU per request is the least any gateway could spend on this workload.
//
//   floor-proxy --listen 127.0.0.1:PORT --downstream 127.0.0.1:MOCKPORT [--threads N]
//
// N threads (default 2), each with its own edge-triggered epoll instance, its own listening socket
// (SO_REUSEPORT on one port) and its own keep-alive pool per downstream path. Each client request
// (HTTP/1.1, GET, no body, ends at "\r\n\r\n") gives six downstream GETs sent at once; each answer is read
// by its Content-Length; when all six are in, one response carries a JSON array of the six bodies, each
// with "source":"<path>" as its first member (the mock's own leading "source" member is replaced, so
// loadtest/lua/check-offers.lua counts exactly six). With PORT 0 it prints "floor listening on ...".
//
// A measuring tool: no HTTP library, no JSON parsing, no timers, no timeouts, no fallbacks, no chunked
// bodies, no error recovery beyond closing a connection that fails (a failing downstream call closes its
// client connection too). Plain libc and threads.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

constexpr std::array<std::string_view, 6> paths = {"inventory",      "channel-price", "coupon",
                                                   "review-summary", "logistics-eta", "recommendation"};
constexpr std::size_t npos = std::string::npos;

enum class kind { listener, client, downstream };

struct conn {
  virtual ~conn() = default;
  kind k;
  int fd = -1;
  bool closed = false;
  std::string in, out;  // bytes received not yet used; bytes still to send
};

struct client : conn {
  int pending = 0;  // downstream calls in flight; the object lives until closed and pending == 0
  std::array<std::string, paths.size()> bodies;
};

struct downstream : conn {
  std::size_t path = 0;
  client* owner = nullptr;  // set while a call is in flight
  bool connecting = false;
  std::size_t need = npos;  // whole answer size once its header is in
};

sockaddr_in parse_address(const char* text) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  const char* colon = std::strrchr(text, ':');
  const std::string host = colon ? std::string(text, colon) : std::string();
  if (!colon || inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) {
    std::fprintf(stderr, "floor-proxy: bad address '%s' (want IPV4:PORT)\n", text);
    std::exit(2);
  }
  a.sin_port = htons(static_cast<unsigned short>(std::atoi(colon + 1)));
  return a;
}

// Reads after an EPOLLIN event until recv returns less than asked for (the socket is drained) or EAGAIN.
// False on end of stream or error.
bool read_available(conn& c) {
  thread_local char scratch[64 * 1024];
  for (;;) {
    const ssize_t n = recv(c.fd, scratch, sizeof scratch, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    if (n == 0) return false;
    c.in.append(scratch, static_cast<std::size_t>(n));
    if (static_cast<std::size_t>(n) < sizeof scratch) return true;
  }
}

// Sends what is in c.out; what the socket does not take stays for the next EPOLLOUT. False on error.
bool flush(conn& c) {
  while (!c.out.empty()) {
    const ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    c.out.erase(0, static_cast<std::size_t>(n));
  }
  return true;
}

class worker {
 public:
  worker(int listen_fd, sockaddr_in target, std::string host) : target_(target), host_(std::move(host)) {
    ep_ = epoll_create1(0);
    listener_.k = kind::listener;
    listener_.fd = listen_fd;
    watch(listener_);
  }

  void run() {
    std::array<epoll_event, 256> events;
    for (;;) {
      const int n = epoll_wait(ep_, events.data(), static_cast<int>(events.size()), -1);
      for (int i = 0; i < n; ++i) {
        auto& c = *static_cast<conn*>(events[i].data.ptr);
        if (c.closed) continue;  // closed earlier in this batch; freed only after it
        if (c.k == kind::listener)
          accept_all();
        else if (c.k == kind::client)
          on_client(static_cast<client&>(c), events[i].events);
        else
          on_downstream(static_cast<downstream&>(c), events[i].events);
      }
      for (conn* dead : graveyard_) delete dead;
      graveyard_.clear();
    }
  }

 private:
  // Registered once, never modified.
  void watch(conn& c) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = &c;
    epoll_ctl(ep_, EPOLL_CTL_ADD, c.fd, &ev);
  }

  static void no_delay(int fd) {
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }

  void accept_all() {
    for (;;) {
      const int fd = accept4(listener_.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;  // EAGAIN, or out of descriptors: nothing to recover
      }
      no_delay(fd);
      auto* c = new client;
      c->k = kind::client;
      c->fd = fd;
      watch(*c);
    }
  }

  void close_client(client& c) {
    if (c.closed) return;
    c.closed = true;
    close(c.fd);  // closing also removes it from the epoll set
    if (c.pending == 0) graveyard_.push_back(&c);
  }

  void on_client(client& c, std::uint32_t ev) {
    if ((ev & EPOLLIN) && !read_available(c)) return close_client(c);
    if ((ev & EPOLLOUT) && !flush(c)) return close_client(c);
    serve_next(c);
    if (!c.closed && (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) close_client(c);
  }

  // Starts the next complete request, if the connection is idle (nothing in flight, nothing left to send).
  void serve_next(client& c) {
    if (c.closed || c.pending > 0 || !c.out.empty()) return;
    const std::size_t end = c.in.find("\r\n\r\n");
    if (end == npos) return;
    // sku from the request line: "GET /api/offer/aggregate?sku=A123 HTTP/1.1"
    const std::string_view line = std::string_view(c.in).substr(0, c.in.find("\r\n"));
    const std::string_view target = line.substr(0, line.rfind(' '));
    std::string_view sku;
    for (std::size_t at = target.find('?'); at != npos; at = target.find('&', at + 1)) {
      if (target.substr(at + 1, 4) == "sku=") {
        sku = target.substr(at + 5);
        sku = sku.substr(0, sku.find('&'));
        break;
      }
    }
    for (std::size_t p = 0; p < paths.size(); ++p) {
      downstream& d = take(p);
      d.owner = &c;
      ++c.pending;
      d.out.append("GET /").append(paths[p]).append("?sku=").append(sku);
      d.out.append(" HTTP/1.1\r\nHost: ").append(host_).append("\r\n\r\n");
      if (!d.connecting && !flush(d)) close_downstream(d);
      if (c.closed) break;  // a failed call closed the client: start no more
    }
    c.in.erase(0, end + 4);
  }

  downstream& take(std::size_t p) {
    auto& pool = idle_[p];
    if (!pool.empty()) {
      downstream* d = pool.back();
      pool.pop_back();
      return *d;
    }
    auto* d = new downstream;
    d->k = kind::downstream;
    d->path = p;
    d->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    no_delay(d->fd);
    const int r = connect(d->fd, reinterpret_cast<const sockaddr*>(&target_), sizeof target_);
    d->connecting = r < 0 && errno == EINPROGRESS;
    watch(*d);
    if (r < 0 && !d->connecting) std::perror("floor-proxy: connect");  // then the first send fails
    return *d;
  }

  void close_downstream(downstream& d) {
    if (d.closed) return;
    d.closed = true;
    close(d.fd);
    graveyard_.push_back(&d);
    if (client* c = d.owner) {
      d.owner = nullptr;
      --c->pending;
      if (c->closed) {
        if (c->pending == 0) graveyard_.push_back(c);
      } else {
        close_client(*c);
      }
    } else {
      std::erase(idle_[d.path], &d);  // an idle connection the mock closed
    }
  }

  void on_downstream(downstream& d, std::uint32_t ev) {
    if (ev & EPOLLOUT) {
      if (d.connecting && !(ev & (EPOLLERR | EPOLLHUP))) d.connecting = false;
      if (!d.connecting && !flush(d)) return close_downstream(d);
    }
    if ((ev & EPOLLIN) && !read_available(d)) return close_downstream(d);
    if (d.owner && answer_complete(d)) finish_call(d);
    if (!d.closed && (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) close_downstream(d);
  }

  // Header up to "\r\n\r\n", then Content-Length bytes of body (the mock always sends Content-Length, spelt
  // so: minimal parsing, no case folding).
  static bool answer_complete(downstream& d) {
    if (d.need == npos) {
      const std::size_t end = d.in.find("\r\n\r\n");
      if (end == npos) return false;
      const std::size_t at = std::string_view(d.in.data(), end).find("\r\nContent-Length:");
      d.need = end + 4 + (at == npos ? 0 : std::strtoul(d.in.data() + at + 17, nullptr, 10));
    }
    return d.in.size() >= d.need;
  }

  void finish_call(downstream& d) {
    client& c = *d.owner;
    const std::size_t body_at = d.in.find("\r\n\r\n") + 4;
    c.bodies[d.path].assign(d.in, body_at, d.need - body_at);
    d.in.erase(0, d.need);
    d.need = npos;
    d.owner = nullptr;
    idle_[d.path].push_back(&d);
    if (--c.pending > 0) return;
    if (c.closed) return graveyard_.push_back(&c);
    respond(c);
  }

  // One array of the six bodies, each with "source":"<path>" first; one send for head and body.
  void respond(client& c) {
    std::string& body = scratch_;
    body.assign(1, '[');
    for (std::size_t p = 0; p < paths.size(); ++p) {
      std::string_view rest = std::string_view(c.bodies[p]).substr(c.bodies[p].empty() ? 0 : 1);
      if (rest.starts_with("\"source\":\"")) {  // the mock's own "source" member: ours replaces it
        const std::size_t quote = rest.find('"', 10);
        if (quote != npos)
          rest = rest.substr(quote + (quote + 1 < rest.size() && rest[quote + 1] == ',' ? 2 : 1));
      }
      if (p > 0) body += ',';
      body.append("{\"source\":\"").append(paths[p]).append("\"");
      if (!rest.starts_with('}')) body += ',';
      body.append(rest);
    }
    body += ']';
    c.out.append("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ");
    c.out.append(std::to_string(body.size())).append("\r\n\r\n").append(body);
    if (!flush(c)) return close_client(c);
    serve_next(c);  // a pipelined request already read
  }

  int ep_ = -1;
  conn listener_;
  sockaddr_in target_;
  std::string host_;
  std::string scratch_;
  std::array<std::vector<downstream*>, paths.size()> idle_;
  std::vector<conn*> graveyard_;
};

int listen_on(sockaddr_in& address) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  socklen_t size = sizeof address;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) < 0 || listen(fd, 4096) < 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) < 0) {
    std::perror("floor-proxy: listen");
    std::exit(1);
  }
  return fd;  // `address` now carries the bound port, for the next threads' sockets
}

}  // namespace

int main(int argc, char** argv) {
  const char* listen_text = nullptr;
  const char* downstream_text = nullptr;
  int threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--listen")
      listen_text = argv[i + 1];
    else if (flag == "--downstream")
      downstream_text = argv[i + 1];
    else if (flag == "--threads")
      threads = std::atoi(argv[i + 1]);
    else
      threads = 0;  // unknown option
  }
  if (!listen_text || !downstream_text || threads < 1 || argc % 2 == 0) {
    std::fprintf(stderr, "usage: floor-proxy --listen IP:PORT --downstream IP:PORT [--threads N]\n");
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);
  sockaddr_in address = parse_address(listen_text);
  const sockaddr_in target = parse_address(downstream_text);
  const bool print_port = address.sin_port == 0;
  std::vector<int> listeners;
  for (int t = 0; t < threads; ++t) listeners.push_back(listen_on(address));
  if (print_port) {
    char host[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &address.sin_addr, host, sizeof host);
    std::printf("floor listening on %s:%u\n", host, static_cast<unsigned>(ntohs(address.sin_port)));
    std::fflush(stdout);
  }
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) {
    running.emplace_back([fd = listeners[static_cast<std::size_t>(t)], target, downstream_text] {
      worker(fd, target, downstream_text).run();
    });
  }
  for (auto& t : running) t.join();
}
