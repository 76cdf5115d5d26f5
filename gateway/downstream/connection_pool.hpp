#pragma once
// Keep-alive connections to one downstream, owned by one I/O thread (no locking: every member runs on
// that thread's io_context). At most `cap` connections are open; a caller at the cap waits in FIFO order
// until a connection is released or closed, its deadline passes, or it is cancelled.
// Include only from downstream implementation files: it pulls in Beast.

#include "gateway/core/cancel_source.hpp"
#include "gateway/core/duration.hpp"
#include "gateway/downstream/host_resolver.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <deque>
#include <memory>
#include <vector>

namespace gateway {

class connection_pool {
 public:
  struct connection {
    explicit connection(const boost::asio::any_io_executor& ex) : stream(ex) {}
    boost::beast::tcp_stream stream;
    boost::beast::flat_buffer buffer;
    clock::time_point last_used{};
    bool reused = false;           // served an exchange before
    std::uint64_t generation = 0;  // of the address it was opened to
  };
  using handle = std::unique_ptr<connection>;

  struct acquire_result {
    handle conn;
    boost::system::error_code error;  // set when conn is null: timeout, operation_aborted, connect error
  };

  connection_pool(boost::asio::any_io_executor ex, std::shared_ptr<const resolved_address> address,
                  std::size_t cap, microseconds connect_timeout, microseconds idle_timeout);
  connection_pool(const connection_pool&) = delete;
  connection_pool& operator=(const connection_pool&) = delete;

  // An idle connection (unless `fresh`), else a new one, waiting at the cap.
  acquire_result acquire(clock::time_point deadline, cancel_source& cancel, bool fresh,
                         boost::asio::yield_context yield);
  // Returns a connection whose last exchange finished cleanly, for reuse.
  void release(handle conn);
  // Closes a connection (failed or unfinished exchange) and frees its slot.
  void discard(handle conn);
  void close_idle();

 private:
  struct waiter {
    boost::asio::steady_timer* timer;
    handle conn;              // a released connection handed over
    bool slot_freed = false;  // a closed connection left room to open one
  };
  void wake_first_waiter(handle conn);
  void close(handle conn);  // closes without waking a waiter
  handle connect(clock::time_point deadline, cancel_source& cancel, boost::system::error_code& ec,
                 boost::asio::yield_context yield);

  boost::asio::any_io_executor ex_;
  bool current(const connection& conn) const { return conn.generation == address_->generation(); }

  std::shared_ptr<const resolved_address> address_;
  std::size_t cap_;
  microseconds connect_timeout_;
  microseconds idle_timeout_;
  std::size_t open_ = 0;
  std::size_t reserved_ = 0;  // slots promised to woken waiters that have not connected yet
  std::vector<handle> idle_;  // most recently used last
  std::deque<waiter*> waiters_;
};

}  // namespace gateway
