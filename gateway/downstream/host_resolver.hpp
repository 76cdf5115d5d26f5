#pragma once
// Addresses of downstream hosts. An IP literal is fixed. A name is resolved on a background thread at
// start and again every `refresh` interval (after a failure: retried after 1 s, backing off to the
// interval), so a name that does not resolve yet, such as a Service created after the gateway, or an
// address that changes is picked up without a restart. Until a name first resolves, calls to it fail at
// once (their entries fall back); after a failed refresh the last known addresses stay in use. A name's
// addresses are all of its IPv4 ones (all IPv6 ones when it has no IPv4 address): each is an endpoint of
// the downstream, balanced by its lanes (a Kubernetes headless Service lists its pods this way).
// getaddrinfo blocks, so it never runs on an I/O thread.

#include "gateway/runtime/duration.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gateway {

class resolved_address {
 public:
  resolved_address() = default;
  explicit resolved_address(boost::asio::ip::tcp::endpoint fixed) : endpoints_{fixed}, fixed_(true) {}

  // An IP literal's address: it never changes (decided when the downstream is loaded).
  bool fixed() const { return fixed_; }

  // The name has resolved at least once.
  bool resolved() const;
  // Every current address, sorted; empty while the name has never resolved.
  std::vector<boost::asio::ip::tcp::endpoint> all() const;
  // Changes whenever the addresses do (read without a lock on every call, to notice a change).
  std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // Returns true when the addresses changed.
  bool set(std::vector<boost::asio::ip::tcp::endpoint> endpoints);

 private:
  mutable std::mutex mutex_;
  std::vector<boost::asio::ip::tcp::endpoint> endpoints_;
  std::atomic<std::uint64_t> generation_{0};
  bool fixed_ = false;
};

class host_resolver {
 public:
  host_resolver();
  host_resolver(const host_resolver&) = delete;
  host_resolver& operator=(const host_resolver&) = delete;
  // Stops the thread. A lookup still blocked in getaddrinfo (an unreachable DNS server) is not waited for
  // beyond a moment: the thread is left to finish it on its own and exit without touching anything else.
  ~host_resolver();

  // An IP literal gives a fixed address; a name is registered for resolution by start(), or at once when
  // the thread runs (a downstream added by a reload). `owner` names the downstream in log lines.
  std::shared_ptr<const resolved_address> add(const std::string& owner, const std::string& host,
                                              std::uint16_t port, microseconds refresh);
  // Starts the thread unless it runs, and waits until every name has been tried once, or `budget` has
  // passed.
  void start(microseconds budget);

 private:
  struct entry {
    std::string owner;
    std::string host;
    std::uint16_t port = 0;
    microseconds refresh{};
    std::shared_ptr<resolved_address> address;
    clock::time_point due{};
    microseconds retry{};
    bool tried = false;
    bool failing = false;
  };
  // Shared with the thread, which may outlive the resolver (see the destructor).
  struct state {
    std::mutex mutex;
    std::condition_variable wake;
    std::list<entry> entries;  // only ever grows: the thread keeps a reference while it resolves
    bool stopping = false;
    bool exited = false;
    std::size_t untried = 0;
  };
  static void run(const std::shared_ptr<state>& st);
  static void resolve(state& st, entry& e);

  std::shared_ptr<state> state_;
  std::thread thread_;
};

}  // namespace gateway
