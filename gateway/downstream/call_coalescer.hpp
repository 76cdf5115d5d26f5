#pragma once
// Coalescing of identical HTTP calls on one I/O thread (downstream `coalesce: true`): while a call is in
// flight (the leader), later calls with the same share_key() (followers: the same method, target, body,
// header fields, the forwarded ones included, and kept answer fields; see share_key.hpp) send nothing and
// get a copy of the leader's result. Used only on its thread: no locking.
//
// - A follower's own cancellation (its deadline, its client leaving) ends it at once, as `cancelled`,
//   from inside its cancel hook (the fan-out allows a call to finish there); the leader goes on.
// - When the leader reports, every follower gets a copy of its result, posted (each delivery is the last
//   act of its own handler).
// - An answer that is its own client's is not copied: one whose kept fields hold a Set-Cookie (a cookie is
//   meant for one client; the cache never stores one either), or one that varies on more than the key
//   (call_result::shareable). Each follower then makes a call of its own, all at once, from posted
//   handlers; those calls lead nobody, so each client gets the downstream's answer (and cookie) for it.
// - A leader that was cancelled (its own request's deadline or client) has no result for the others: the
//   first follower becomes the leader with a call of its own, which the rest now follow; that call starts
//   from a posted handler too, never inside the leader's report.
//
// Ownership: followers are owned here until their result is delivered, their own call is started, or
// they are cancelled; what their call_request points to (request id, traceparent, parameters, header
// fields) lives in their fan-out and request, which wait for them; their target and body are copied.

#include "gateway/downstream/downstream.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gateway {

class call_coalescer {
 public:
  // `start_call` starts a real call. `lead`: the key of the calls it leads, which it hands to leader_done()
  // with its result; empty for a call that leads nobody.
  using starter = std::function<void(const call_request&, call_sink&, std::size_t, std::string lead)>;
  call_coalescer(boost::asio::any_io_executor ex, starter start_call);

  // Starts the call: it follows the call in flight for its key if there is one, else leads it.
  void start(const call_request& request, call_sink& sink, std::size_t index);
  // The leading call for `key` (its share_key()) reports `result` (before its own sink is told).
  void leader_done(std::string_view key, const call_result& result);

  // Calls that followed another on this thread (read by the metrics on another thread).
  std::uint64_t coalesced() const { return coalesced_.load(std::memory_order_relaxed); }

 private:
  struct follower {
    std::string key;     // its share_key()
    std::string target;  // request.target and request.body point to these copies
    std::string body;
    call_request request;
    call_sink* sink = nullptr;
    std::size_t index = 0;
    std::optional<cancel_source::scoped_hook> hook;
  };
  using followers = std::vector<std::unique_ptr<follower>>;

  void drop(const std::string& key, follower* f);

  boost::asio::any_io_executor ex_;
  starter start_call_;
  std::unordered_map<std::string, followers> in_flight_;  // by key: the followers of its leader
  std::atomic<std::uint64_t> coalesced_{0};
};

}  // namespace gateway
