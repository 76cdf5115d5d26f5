#pragma once
// Open connections per client address, capped (limits.max_connections_per_client), so that one host
// cannot take every connection slot. Taken by the acceptor (I/O thread 0), given back by the connection's
// own I/O thread when it ends: a mutex guards the table, touched once per connection at each end.

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace gateway {

class client_slots {
 public:
  using address = std::array<std::uint8_t, 16>;  // IPv6, or IPv4-mapped

  // Set once before the first connection; 0 = unlimited.
  void set_cap(std::size_t cap) { cap_ = cap; }

  // Takes a slot for `a`; false when it already has `cap` connections (or when cap is 0: unlimited, and
  // nothing is counted).
  bool take(const address& a);
  void give(const address& a);

  // A hash of an address, for the tables of clients (here and server/admin_connections.hpp).
  struct hash {
    std::size_t operator()(const address& a) const noexcept;
  };

 private:
  std::size_t cap_ = 0;
  std::mutex mutex_;
  std::unordered_map<address, std::size_t, hash> open_;
};

}  // namespace gateway
