#pragma once
// One pipelined connection to Redis, owned by one I/O thread: request coroutines hand it encoded commands
// (redis_command()) and wait for their replies; one writer coroutine sends every command queued since its
// last write in one write (so concurrent requests share writes), one reader coroutine parses the replies
// with hiredis's redisReader and hands them out in FIFO order. hiredis is used for the protocol bytes only;
// the transport is the link's own Asio socket, plain TCP or TLS.
//
// Errors are values (redis_status): `unavailable` at once, without waiting, while the link is not
// connected (connecting, refused, reset, TLS handshake or AUTH failed) or when `max_outstanding` commands
// are already unanswered; `timeout` at the caller's deadline or the link's `timeout`, whichever is first
// (its reply, arriving later, is discarded). A link that breaks fails all its waiters as `unavailable` and
// connects again in the background, with capped exponential backoff and jitter; a reply overdue by
// `hung_after` past its timeout takes the server for hung (closed, connected anew). An error reply is a
// reply: `ok` with the reply, for the caller to read.
//
// Thread: every member function except counts() must be called on the link's executor (one io_context
// run by one thread); nothing is locked. Waiters are woken through that io_context's queue (a timer's
// cancel), never resumed inside the link's code. A terminal cancellation of a waiting coroutine ends its
// wait as `timeout`.
//
// Ownership: made with make_shared and owned by its user (redis_limiter); start() spawns its coroutines,
// which hold a shared_ptr to it, so it lives until they have ended. close() ends them (and fails the
// waiters); the object is freed when the last of the owner's pointer and the coroutines lets go (or when
// the io_context is destroyed with them still suspended).

#include "gateway/limit/redis_settings.hpp"
#include "gateway/runtime/duration.hpp"
#include "gateway/runtime/wake_event.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/spawn.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>

struct redisReply;
struct redisReader;

namespace boost::asio::ssl {
template <typename Stream>
class stream;
}

namespace gateway {

class tls_client_context;

enum class redis_status : unsigned char { ok, timeout, unavailable };

// A reply as hiredis parsed it (type REDIS_REPLY_*, integer, str, element), freed with freeReplyObject.
struct redis_reply_deleter {
  void operator()(redisReply* r) const;
};
using redis_reply_ptr = std::unique_ptr<redisReply, redis_reply_deleter>;

struct redis_result {
  redis_status state = redis_status::unavailable;
  redis_reply_ptr reply;  // set when state == ok (possibly an error reply)
};

// The protocol bytes of one command (hiredis's redisFormatCommandArgv); binary-safe arguments.
std::string redis_command(std::initializer_list<std::string_view> args);

// What a link did, for metrics: written by the link's thread only, read from any (relaxed).
struct redis_link_counts {
  std::atomic<std::uint64_t> connect_attempts{0};
  std::atomic<std::uint64_t> connects{0};          // TCP (and TLS) connected
  std::atomic<std::uint64_t> connect_failures{0};  // resolve, connect or TLS handshake failed or timed out
  std::atomic<std::uint64_t> auth_failures{0};     // AUTH or SELECT answered with an error
  std::atomic<std::uint64_t> breaks{0};    // a connected link lost (reset, protocol error, hung, close)
  std::atomic<std::uint64_t> hung{0};      // of them: replies overdue by hung_after
  std::atomic<std::uint64_t> commands{0};  // submitted and queued for sending
  std::atomic<std::uint64_t> writes{0};    // socket writes (each carries one or more commands)
  std::atomic<std::uint64_t> replies{0};   // replies read, handed out or discarded
  std::atomic<std::uint64_t> timeouts{0};  // waiters that gave up at their deadline
  std::atomic<std::uint64_t> refused{0};   // submits refused at once (down, or at max_outstanding)
  std::atomic<std::uint64_t> failed{0};    // waiters failed because their link broke
};

class redis_link : public std::enable_shared_from_this<redis_link> {
 public:
  // `tls`: the context TLS connections are made from, shared by the links (null: plain TCP).
  // `settings.host` is resolved on each connect.
  redis_link(boost::asio::any_io_executor ex, const redis_settings& settings,
             std::shared_ptr<const tls_client_context> tls);
  redis_link(const redis_link&) = delete;
  redis_link& operator=(const redis_link&) = delete;
  ~redis_link();

  // Starts connecting in the background (once); until connected, submit() answers `unavailable`.
  void start();
  // Ends the coroutines, fails the waiters (`unavailable`); later submits are refused. Idempotent.
  void close();

  // Sends `command` (redis_command()'s bytes, one command) and waits for its reply until `deadline` or
  // the link's timeout, whichever is first.
  redis_result submit(std::string_view command, clock::time_point deadline, boost::asio::yield_context yield);

  bool connected() const { return state_ == state::ready; }
  std::size_t outstanding() const { return fifo_.size(); }
  const redis_link_counts& counts() const { return counts_; }
  // Why the link last failed or broke ("" if it never did), for logs and the status page.
  const std::string& last_error() const { return last_error_; }

 private:
  // connecting -> ready | backoff | closed; ready -> backoff | closed; backoff -> connecting | closed.
  enum class state : unsigned char { idle, connecting, ready, backoff, closed };
  struct waiter;
  // One command sent or queued, waiting for its reply in FIFO order.
  struct slot {
    waiter* caller;  // null: abandoned at its deadline (the reply is discarded), or `own`
    clock::time_point queued;
    bool own;  // the link's AUTH or SELECT: an error reply breaks the link
  };
  using tls_stream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>;

  void enter(state next);
  void run(boost::asio::yield_context yield);
  bool connect(boost::asio::yield_context yield);
  void read_replies(boost::asio::yield_context yield);
  void write_commands(std::uint64_t generation, boost::asio::yield_context yield);
  void watch_overdue(std::uint64_t generation, boost::asio::yield_context yield);
  void spawn_helper(void (redis_link::*body)(std::uint64_t, boost::asio::yield_context));
  bool deliver(redis_reply_ptr reply);
  void break_link();
  void fail_waiters();
  void wait_backoff(boost::asio::yield_context yield);
  void shut_socket();
  bool current(std::uint64_t generation) const { return generation == generation_ && state_ == state::ready; }

  boost::asio::any_io_executor ex_;
  redis_settings settings_;
  std::shared_ptr<const tls_client_context> tls_context_;
  state state_ = state::idle;
  std::uint64_t generation_ = 0;  // one per connection: helpers of an earlier one end
  boost::asio::ip::tcp::resolver resolver_;
  boost::asio::ip::tcp::socket socket_;
  std::unique_ptr<tls_stream> tls_;  // over socket_, for the current connection; null for plain TCP
  boost::asio::steady_timer connect_timer_;
  boost::asio::steady_timer backoff_timer_;
  boost::asio::steady_timer overdue_timer_;
  std::chrono::milliseconds backoff_{0};
  std::string last_error_;
  bool served_ = false;  // the current connection answered a command of a caller
  std::string queued_;   // commands not yet written, in FIFO order
  std::string writing_;  // the commands of the write in flight
  std::deque<slot> fifo_;
  wake_event write_wake_;  // the writer's: commands were queued, or the connection ended
  wake_event helpers_done_;
  int helpers_ = 0;  // writer and overdue watch of the current connection still running
  std::unique_ptr<redisReader, void (*)(redisReader*)> reader_;
  std::array<char, 16 * 1024> read_buffer_;
  redis_link_counts counts_;
};

}  // namespace gateway
