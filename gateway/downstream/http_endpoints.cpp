#include "gateway/downstream/http_endpoints.hpp"

#include "gateway/downstream/endpoint_breakers.hpp"

#include <spdlog/spdlog.h>
#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <utility>

namespace gateway {

namespace {

constexpr clock::duration bucket_width = std::chrono::seconds(5);
constexpr std::size_t min_samples = 20;  // fewer good latencies: no percentile yet (max_delay)
constexpr std::size_t recompute_every = 16;

}  // namespace

http_endpoints::endpoint::endpoint(const boost::asio::any_io_executor& ex,
                                   const boost::asio::ip::tcp::endpoint& to, std::size_t cap,
                                   std::size_t connecting_cap, const downstream_settings& settings,
                                   tls_handshake_counts& handshakes)
    : address(to),
      pool(ex, to, cap, settings.connect_timeout, settings.idle_timeout, settings.tls.context.get(),
           &handshakes, connecting_cap) {}

http_endpoints::http_endpoints(boost::asio::any_io_executor ex,
                               std::vector<std::shared_ptr<const resolved_address>> sources, std::size_t cap,
                               std::size_t connecting_cap, const downstream_settings& settings,
                               endpoint_breakers* breakers)
    : ex_(std::move(ex)),
      sources_(std::move(sources)),
      cap_(cap),
      connecting_cap_(connecting_cap),
      settings_(settings),
      breakers_(breakers),
      random_(static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(this))) {
  fixed_ = std::all_of(sources_.begin(), sources_.end(), [](const auto& s) { return s->fixed(); });
}

http_endpoints::choice http_endpoints::pick(clock::time_point now, const endpoint* avoid) {
  refresh();
  if (endpoints_.size() == 1) {  // the usual case: one address
    auto& only = *endpoints_.front();
    if (only.removed) return {};
    ++only.in_flight;
    return {&only, {}, false};
  }
  boost::container::small_vector<endpoint*, 16> candidates;
  boost::container::small_vector<endpoint*, 4> refused;  // by their breakers, in this pick
  const auto gather = [&](bool ejected_too, bool avoid_too) {
    for (auto& e : endpoints_) {
      if (e->removed || (!ejected_too && now < e->ejected_until) || (!avoid_too && e.get() == avoid) ||
          std::find(refused.begin(), refused.end(), e.get()) != refused.end())
        continue;
      candidates.push_back(e.get());
    }
  };
  const bool ask_breakers = live_ > 1;
  for (const auto& [ejected_too, avoid_too] :
       {std::pair{false, false}, std::pair{true, false}, std::pair{true, true}}) {
    candidates.clear();
    gather(ejected_too, avoid_too);
    while (!candidates.empty()) {
      auto at = std::size_t{0};
      if (candidates.size() > 1) {
        std::uniform_int_distribution<std::size_t> any(0, candidates.size() - 1);
        const auto a = any(random_);
        auto b = any(random_);
        if (b == a) b = (a + 1) % candidates.size();
        at = candidates[b]->in_flight < candidates[a]->in_flight ? b : a;
      }
      endpoint* chosen = candidates[at];
      circuit_breaker::ticket ticket;
      if (ask_breakers && chosen->breaker) {
        ticket = chosen->breaker->allow(now);
        if (!ticket.allowed) {
          refused.push_back(chosen);
          candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(at));
          continue;
        }
      }
      ++chosen->in_flight;
      return {chosen, ticket, false};
    }
  }
  return {nullptr, {}, !refused.empty()};
}

void http_endpoints::attempt_ended(endpoint& e, const circuit_breaker::ticket& ticket, bool failed, bool good,
                                   clock::time_point now) {
  --e.in_flight;
  if (ticket.allowed) {
    e.breaker->record(ticket,
                      failed ? call_outcome::error
                      : good ? call_outcome::ok
                             : call_outcome::cancelled,
                      now);
  }
  if (!failed) {
    e.failures = 0;
    return;
  }
  const auto limit = settings_.ejection.consecutive_failures;
  if (limit == 0 || e.removed || ++e.failures < limit) return;
  e.failures = 0;
  if (now >= e.ejected_until) eject(e, now);
}

// Leaves `e` out of the balancing for a while, unless that would take more than max_percent of the
// endpoints out at once.
void http_endpoints::eject(endpoint& e, clock::time_point now) {
  std::size_t live = 0;
  std::size_t ejected = 0;
  for (const auto& other : endpoints_) {
    if (other->removed) continue;
    ++live;
    if (now < other->ejected_until) ++ejected;
  }
  if ((ejected + 1) * 100 > live * settings_.ejection.max_percent) return;
  const auto& ej = settings_.ejection;
  ++e.ejections;
  const auto length = std::min<clock::duration>(clock::duration(ej.base_time) * e.ejections, ej.max_time);
  e.ejected_until = now + length;
  ejections_total_.store(ejections_total_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  spdlog::warn("downstream '{}': endpoint {}:{} ejected for {} ms after {} failures in a row", settings_.name,
               e.address.address().to_string(), e.address.port(),
               std::chrono::duration_cast<std::chrono::milliseconds>(length).count(),
               ej.consecutive_failures);
}

void http_endpoints::close_idle() {
  for (auto& e : endpoints_) e->pool.close_idle();
}

// Follows the sources' addresses: new ones get an endpoint, gone ones are retired; retired endpoints that
// no attempt uses any more are freed.
void http_endpoints::refresh() {
  if (fixed_ && seen_ != ~std::uint64_t{0}) return;  // IP literals, already made
  std::uint64_t generation = 0;
  for (const auto& source : sources_) generation += source->generation();
  if (generation != seen_) {
    seen_ = generation;
    std::vector<boost::asio::ip::tcp::endpoint> now;
    for (const auto& source : sources_) {
      const auto all = source->all();
      now.insert(now.end(), all.begin(), all.end());
    }
    std::sort(now.begin(), now.end());
    now.erase(std::unique(now.begin(), now.end()), now.end());
    for (auto& e : endpoints_) {
      if (e->removed || std::binary_search(now.begin(), now.end(), e->address)) continue;
      e->removed = true;
      e->pool.retire();
      ++retired_;
    }
    for (const auto& address : now) {
      const bool known = std::any_of(endpoints_.begin(), endpoints_.end(),
                                     [&](const auto& e) { return !e->removed && e->address == address; });
      if (known) continue;
      endpoints_.push_back(
          std::make_unique<endpoint>(ex_, address, cap_, connecting_cap_, settings_, handshakes_));
      if (breakers_ != nullptr) endpoints_.back()->breaker = breakers_->at(address);
    }
    live_ = now.size();
    endpoint_count_.store(static_cast<unsigned>(now.size()), std::memory_order_relaxed);
  }
  if (retired_ == 0) return;
  const auto before = endpoints_.size();
  std::erase_if(endpoints_, [](const auto& e) { return e->removed && e->in_flight == 0; });
  retired_ -= before - endpoints_.size();
}

void http_endpoints::call_started(clock::time_point now) {
  ++calls_;
  if (!settings_.hedge.enabled) return;
  roll_window(now);
  ++window_calls_[0];
}

bool http_endpoints::try_retry() {
  const auto& r = settings_.retry;
  const auto allowed = std::max<std::uint64_t>(r.budget_min, std::uint64_t{calls_} * r.budget_percent / 100);
  if (retries_ >= allowed) return false;
  ++retries_;
  retries_total_.store(retries_total_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return true;
}

bool http_endpoints::try_hedge(clock::time_point now) {
  roll_window(now);
  const auto calls = std::uint64_t{window_calls_[0]} + window_calls_[1];
  const auto hedges = std::uint64_t{window_hedges_[0]} + window_hedges_[1];
  if ((hedges + 1) * 100 > calls * settings_.hedge.budget_percent) return false;
  ++window_hedges_[0];
  hedges_total_.store(hedges_total_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return true;
}

clock::duration http_endpoints::hedge_delay() const {
  const auto& h = settings_.hedge;
  clock::duration delay = h.delay;
  if (delay.count() == 0) delay = recorded_ >= min_samples ? percentile_ : clock::duration(h.max_delay);
  return std::clamp<clock::duration>(delay, h.min_delay, h.max_delay);
}

void http_endpoints::record_latency(clock::duration latency) {
  if (!settings_.hedge.enabled || settings_.hedge.delay.count() > 0) return;
  latencies_[recorded_ % samples] = latency;
  ++recorded_;
  if (recorded_ < min_samples || recorded_ % recompute_every != 0) return;
  const std::size_t n = std::min(recorded_, samples);
  std::array<clock::duration, samples> sorted;
  std::copy_n(latencies_.begin(), n, sorted.begin());
  const std::size_t at = std::min(n - 1, n * settings_.hedge.percentile / 100);
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(at),
                   sorted.begin() + static_cast<std::ptrdiff_t>(n));
  percentile_ = sorted[at];
}

clock::duration http_endpoints::jitter(clock::duration limit) {
  if (limit.count() <= 0) return clock::duration(0);
  std::uniform_int_distribution<clock::duration::rep> pick(0, limit.count());
  return clock::duration(pick(random_));
}

void http_endpoints::roll_window(clock::time_point now) {
  const auto bucket = now.time_since_epoch() / bucket_width;
  if (bucket == bucket_) return;
  if (bucket == bucket_ + 1) {
    window_calls_[1] = window_calls_[0];
    window_hedges_[1] = window_hedges_[0];
  } else {
    window_calls_[1] = window_hedges_[1] = 0;
  }
  window_calls_[0] = window_hedges_[0] = 0;
  bucket_ = bucket;
}

}  // namespace gateway
