#pragma once
// POSTs OTLP/HTTP protobuf bodies to a collector, for the tracer's export thread: blocks the calling
// thread (never an I/O thread) until the collector answers or the deadline passes, whichever is first.
// Plain http:// only: the collector is expected beside the gateway (a sidecar or node agent); TLS would
// go through Asio SSL as the downstream client does. The connection is kept between exports when the
// collector keeps it alive; a kept one found closed (no byte of an answer came back) is replaced once
// within the same deadline, so a collector that read a batch and closed without answering gets it twice.
// Name resolution (getaddrinfo, only for a host name) is synchronous and not bounded by the deadline:
// done at the first export and again after a failed connect.

#include "gateway/runtime/duration.hpp"

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

namespace gateway {

class otlp_http_sender {
 public:
  // `endpoint`: http://host[:port][/path], e.g. http://127.0.0.1:4318/v1/traces. Throws
  // std::invalid_argument for anything else.
  explicit otlp_http_sender(std::string_view endpoint);
  ~otlp_http_sender();
  otlp_http_sender(const otlp_http_sender&) = delete;
  otlp_http_sender& operator=(const otlp_http_sender&) = delete;

  // Sends `body` (Content-Type application/x-protobuf). Returns "" on a 2xx answer, else what failed
  // (connect, write or read error, timeout, or the status). Connect, write and read all end by `deadline`.
  std::string post(std::string body, clock::time_point deadline);

  // Any thread: ends a post() in progress within moments (its connect, write or read completes as
  // aborted) and makes every later one fail at once.
  void abort();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace gateway
