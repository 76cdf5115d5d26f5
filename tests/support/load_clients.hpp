#pragma once
// Clients that load the gateway's seed route in the lifecycle tests: many keep-alive clients driven by one
// poll() loop on the calling thread (drain_run, for the drain under load) and blocking keep-alive clients
// on threads (run_threaded_load). Neither throws on a network or HTTP problem: problems are collected as
// text for the test to check.

#include <netinet/in.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace test_support {

// The local port of a connected socket.
std::uint16_t local_port(int fd);

// A raw HTTP/1.1 response with a Content-Length: its status, whether it asks to close, and its body.
// `complete` is false while bytes are missing; `problem` is set when the bytes cannot be such a response.
struct raw_response {
  bool complete = false;
  std::string problem;
  int status = 0;
  bool close = false;
  std::string head;
  std::string body;
};

raw_response parse_raw_response(const std::string& bytes);

// One keep-alive client: sends a request, reads the answer, sends the next; reconnects when the gateway
// closes the connection, and ends when a connection is refused.
struct drain_client {
  enum class phase { connecting, sending, reading, done };
  int fd = -1;
  phase at = phase::done;
  std::string out;  // bytes of the request not yet sent
  std::string in;   // bytes of the answer received so far
  std::chrono::steady_clock::time_point since;
  int answered = 0;
  int index = 0;
};

// `count` drain_clients of 127.0.0.1:`port`, connected at construction and moved on by poll_once. Client i
// asks for sku "D<i>" and expects a 200 array with one entry per seed call. Until the test sets
// `signalled` (when it sends SIGTERM), a connection lost before an answer is a failure; afterwards it
// counts as not accepted and the client reconnects, and a refused connection ends the client.
class drain_run {
 public:
  drain_run(std::uint16_t port, int count);
  drain_run(const drain_run&) = delete;
  drain_run& operator=(const drain_run&) = delete;
  ~drain_run();  // closes the clients still open

  // Waits up to `timeout` for the clients' sockets, moves every ready client on, then fails and closes
  // each client that made no progress for 5 s.
  void poll_once(std::chrono::milliseconds timeout);
  // Every client has received at least `n` answers.
  bool all_answered(int n) const;
  // Clients with a request sent (or being sent) and not yet answered.
  int in_flight() const;
  bool all_done() const;
  // Closes every client; each one still open is a failure described by `why`.
  void close_all(const std::string& why);

  bool signalled = false;
  int inflight_at_signal = 0;  // clients with a request sent and not yet answered at SIGTERM
  int answered_before = 0;
  int answered_during = 0;  // after SIGTERM
  int not_accepted = 0;     // connection closed before any byte of the answer, after SIGTERM
  int refused = 0;
  std::vector<std::string> failures;

 private:
  void fail(const drain_client& c, const std::string& what);
  void close(drain_client& c);
  void connect(drain_client& c);
  void connect_failed(drain_client& c, int error);
  void send_request(drain_client& c);
  void lost_before_answer(drain_client& c, const std::string& how);
  void on_writable(drain_client& c);
  void on_readable(drain_client& c);

  sockaddr_in address_{};
  std::vector<drain_client> clients_;
};

// What `threads` blocking keep-alive clients saw, each sending `per_thread` seed-route requests in a row
// (sku `sku_prefix` + a number, 5 s timeout each) and stopping at its first status other than 200 or its
// first http_error.
struct threaded_load_result {
  int answered = 0;
  long long slowest_ms = 0;
  std::vector<std::string> errors;  // one per thread, empty when it got all its answers
};

threaded_load_result run_threaded_load(std::uint16_t port, int threads, int per_thread,
                                       const std::string& sku_prefix);

}  // namespace test_support
