#pragma once
// One pass-through exchange's connection to an HTTP downstream (proxy routes): leased from the
// downstream's own pools (downstream::lease) on the request's I/O thread by the request's coroutine, which
// then writes and reads raw bytes through it (through TLS for an https downstream). On a plain
// connection, what the socket takes or holds at once is written or read by one system call, without an
// asynchronous operation; only a wait goes through Asio. Every wait ends by a
// given time (timed_out) or when the exchange's cancel_source fires (cancelled): the source's hook is
// the link's only while one of its waits runs, and only cancels the socket's operations, so it may fire
// from any completion handler on the thread without running the coroutine inside it.
//
// Ownership: the coroutine that leased it, and nobody else. finish() gives the connection back for
// reuse when its exchange ended cleanly; destroying the link without finish() closes the connection
// and counts a failed attempt against the endpoint. Beast-free.

#include "gateway/downstream/call_result.hpp"
#include "gateway/runtime/cancel_source.hpp"
#include "gateway/runtime/duration.hpp"

#include <boost/asio/error.hpp>  // before spawn.hpp, which uses it without including it
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/spawn.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace gateway {

class proxy_link {
 public:
  enum class status : std::uint8_t { ok, eof, timed_out, cancelled, failed };
  struct io_result {
    std::size_t bytes = 0;
    status how = status::ok;
    boost::system::error_code ec = {};  // what failed (empty when ok, timed out or cancelled)
    bool ok() const { return how == status::ok; }
  };

  virtual ~proxy_link() = default;
  // Writes `first` then `second` whole, by `until`.
  virtual io_result write(std::string_view first, std::string_view second, clock::time_point until,
                          boost::asio::yield_context yield) = 0;
  // Reads what is there (at least one byte, at most `max`), waiting by `until` for something.
  virtual io_result read_some(char* out, std::size_t max, clock::time_point until,
                              boost::asio::yield_context yield) = 0;
  // Ends the lease. `reusable`: the answer was read whole, nothing followed it, and the downstream keeps
  // the connection open (it goes back to the pool); `failed`: the downstream failed (counted against its
  // endpoint, for ejection and its breaker).
  virtual void finish(bool reusable, bool failed) = 0;
  // The answer had no body (HEAD, 204, 304); called before finish(). A downstream out of step may still
  // send one behind it, too late for finish() to see: the connection's next lease looks for bytes first
  // (one system call, paid only after such an answer).
  virtual void answered_without_body() = 0;
  // The connection served an exchange before: one that fails before any of the answer arrived may have
  // been closed by the downstream while it idled (the request is then worth one more try on a new one).
  virtual bool reused() const = 0;
  // The address of the endpoint it goes to.
  virtual boost::asio::ip::tcp::endpoint remote() const = 0;
};

// Why no connection could be leased: the kind decides the client's answer (busy and circuit_open 503,
// timed_out 504, failed 502) and whether the endpoint is blamed (timed_out, failed); `text` says it (a
// static string), `error` what kind of failure a failed one was (for the metrics).
struct lease_failure {
  enum class kind : std::uint8_t { busy, circuit_open, timed_out, failed, cancelled };
  kind what = kind::failed;
  const char* text = "";
  call_error error = call_error::other;
};

struct lease_request {
  std::size_t thread_index = 0;     // the I/O thread the coroutine runs on
  clock::time_point ready_by;       // connected (and the TLS handshake done) by then
  cancel_source* cancel = nullptr;  // the exchange's; must outlive the link
  bool fresh = false;               // a new connection, never an idle one (after a reused one failed)
};

}  // namespace gateway
