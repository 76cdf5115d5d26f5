#pragma once
// Which admin connections stay open, so that hostile sockets can never keep a probe out. Every new
// connection is admitted; to make room, the connection that has waited longest for a request head is
// closed: among the new one's own address when that address already holds `max_per_client`, else among
// all when `max_total` are open. A connection goes to the back of both lines whenever one of its request
// heads has arrived. A probe sends its head at once and is answered before `max_per_client` newer
// connections from its address (or `max_total` from anywhere) can arrive, while a socket that says
// nothing, or drips, holds its slot only until that many newer ones came (or its head timeout).
//
// Admin thread only, no locks. A member is linked into the table by admit() and unlinked by leave(), by
// eviction or by its own destructor; it is owned by its connection. The `close` it is given is called
// once, inside a later admit(), after the member has been unlinked: it may only close the socket (the
// connection's coroutine resumes later, from the queue, and finds itself evicted()).

#include "gateway/server/client_slots.hpp"

#include <boost/intrusive/list.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>

namespace gateway {

class admin_connections {
 public:
  using address = client_slots::address;  // IPv6, or IPv4-mapped

  class member {
   public:
    member(const address& peer, std::function<void()> close) : peer_(peer), close_(std::move(close)) {}
    member(const member&) = delete;
    member& operator=(const member&) = delete;
    ~member() {
      if (table_) table_->leave(*this);
    }
    bool evicted() const { return evicted_; }

   private:
    friend class admin_connections;
    using hook = boost::intrusive::list_member_hook<>;
    hook in_line_;    // all members, longest waiting first
    hook in_client_;  // this address's members, longest waiting first
    address peer_;
    std::function<void()> close_;
    admin_connections* table_ = nullptr;  // set while linked
    bool evicted_ = false;
  };

  // `max_total` is at least 1 in effect; `max_per_client` 0: no cap per address, else at most max_total.
  admin_connections(std::size_t max_total, std::size_t max_per_client);
  ~admin_connections();  // unlinks the members left (they are not closed)
  admin_connections(const admin_connections&) = delete;
  admin_connections& operator=(const admin_connections&) = delete;

  // Links `m` at the back, after closing (and unlinking) the member that makes room for it, if a cap
  // is reached. `m` must not be linked.
  void admit(member& m);
  // A request head of `m` has arrived: it becomes the last to be evicted. No-op once unlinked.
  void refresh(member& m);
  // Unlinks `m` (its connection ends); no-op when it is not linked.
  void leave(member& m);
  // Closes and unlinks every member, as evicted but not counted (the listener stops).
  void close_all();

  std::size_t size() const { return line_.size(); }
  // Members closed because their address held max_per_client / because max_total were open.
  std::uint64_t evicted_for_client() const { return evicted_for_client_; }
  std::uint64_t evicted_for_total() const { return evicted_for_total_; }

 private:
  using line =
      boost::intrusive::list<member, boost::intrusive::member_hook<member, member::hook, &member::in_line_>>;
  using client_line =
      boost::intrusive::list<member,
                             boost::intrusive::member_hook<member, member::hook, &member::in_client_>>;
  void evict(member& m);

  std::size_t max_total_;
  std::size_t max_per_client_;
  line line_;
  std::unordered_map<address, client_line, client_slots::hash> clients_;
  std::uint64_t evicted_for_client_ = 0;
  std::uint64_t evicted_for_total_ = 0;
};

}  // namespace gateway
