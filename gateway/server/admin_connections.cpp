#include "gateway/server/admin_connections.hpp"

#include <algorithm>
#include <cassert>

namespace gateway {

admin_connections::admin_connections(std::size_t max_total, std::size_t max_per_client)
    : max_total_(std::max<std::size_t>(max_total, 1)),
      max_per_client_(std::min(max_per_client, max_total_)) {}

admin_connections::~admin_connections() {
  while (!line_.empty()) leave(line_.front());
}

void admin_connections::admit(member& m) {
  assert(!m.table_ && !m.evicted_);
  auto& own = clients_[m.peer_];
  // The address's own cap first: a crowded address makes room among its own connections, so that it
  // cannot push out anyone else's while the total has room.
  if (max_per_client_ != 0 && own.size() >= max_per_client_) {
    ++evicted_for_client_;
    evict(own.front());
  } else if (line_.size() >= max_total_) {
    ++evicted_for_total_;
    evict(line_.front());
  }
  // evict() erases a line that it empties, which may be this address's own: look it up again.
  auto& mine = clients_[m.peer_];
  mine.push_back(m);
  line_.push_back(m);
  m.table_ = this;
}

void admin_connections::refresh(member& m) {
  if (m.table_ != this) return;
  line_.splice(line_.end(), line_, line_.iterator_to(m));
  auto& own = clients_.find(m.peer_)->second;
  own.splice(own.end(), own, own.iterator_to(m));
}

void admin_connections::leave(member& m) {
  if (m.table_ != this) return;
  line_.erase(line_.iterator_to(m));
  const auto own = clients_.find(m.peer_);
  own->second.erase(own->second.iterator_to(m));
  if (own->second.empty()) clients_.erase(own);
  m.table_ = nullptr;
}

void admin_connections::close_all() {
  while (!line_.empty()) evict(line_.front());
}

void admin_connections::evict(member& m) {
  leave(m);
  m.evicted_ = true;
  if (m.close_) m.close_();
}

}  // namespace gateway
