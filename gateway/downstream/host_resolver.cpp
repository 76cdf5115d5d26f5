#include "gateway/downstream/host_resolver.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>

#include <algorithm>

namespace gateway {

namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

constexpr microseconds first_retry = std::chrono::seconds(1);

std::string to_text(const tcp::endpoint& e) {
  return e.address().to_string() + ":" + std::to_string(e.port());
}

}  // namespace

bool resolved_address::resolved() const {
  std::lock_guard lock(mutex_);
  return !endpoints_.empty();
}

std::vector<tcp::endpoint> resolved_address::all() const {
  std::lock_guard lock(mutex_);
  return endpoints_;
}

bool resolved_address::set(std::vector<tcp::endpoint> endpoints) {
  std::sort(endpoints.begin(), endpoints.end());
  endpoints.erase(std::unique(endpoints.begin(), endpoints.end()), endpoints.end());
  std::lock_guard lock(mutex_);
  if (endpoints_ == endpoints) return false;
  endpoints_ = std::move(endpoints);
  generation_.fetch_add(1, std::memory_order_release);
  return true;
}

host_resolver::host_resolver() : state_(std::make_shared<state>()) {}

host_resolver::~host_resolver() {
  if (!thread_.joinable()) return;
  std::unique_lock lock(state_->mutex);
  state_->stopping = true;
  state_->wake.notify_all();
  const bool exited =
      state_->wake.wait_for(lock, std::chrono::milliseconds(500), [&] { return state_->exited; });
  lock.unlock();
  if (exited) {
    thread_.join();
  } else {
    thread_.detach();  // blocked in getaddrinfo; it exits when that returns
  }
}

std::shared_ptr<const resolved_address> host_resolver::add(const std::string& owner, const std::string& host,
                                                           std::uint16_t port, microseconds refresh) {
  boost::system::error_code ec;
  const auto literal = net::ip::make_address(host, ec);
  if (!ec) return std::make_shared<resolved_address>(tcp::endpoint(literal, port));
  auto address = std::make_shared<resolved_address>();
  std::lock_guard lock(state_->mutex);
  state_->entries.push_back({owner, host, port, refresh, address, clock::now(), first_retry, false, false});
  ++state_->untried;
  state_->wake.notify_all();  // a running thread resolves it now
  return address;
}

void host_resolver::start(microseconds budget) {
  {
    const std::lock_guard lock(state_->mutex);
    if (state_->entries.empty()) return;
  }
  if (!thread_.joinable()) thread_ = std::thread([st = state_] { run(st); });
  std::unique_lock lock(state_->mutex);
  if (!state_->wake.wait_for(lock, budget, [this] { return state_->untried == 0; })) {
    spdlog::warn("downstream names still resolving after {} ms; their calls fall back until they resolve",
                 std::chrono::duration_cast<milliseconds>(budget).count());
  }
}

void host_resolver::run(const std::shared_ptr<state>& st) {
  std::unique_lock lock(st->mutex);
  while (!st->stopping) {
    auto next = std::min_element(st->entries.begin(), st->entries.end(),
                                 [](const entry& a, const entry& b) { return a.due < b.due; });
    if (clock::now() < next->due) {
      st->wake.wait_until(lock, next->due);
      continue;
    }
    entry& e = *next;
    lock.unlock();  // entries only grows (a list): `e` stays valid
    resolve(*st, e);
    lock.lock();
    if (!e.tried) {
      e.tried = true;
      --st->untried;
      st->wake.notify_all();
    }
  }
  st->exited = true;
  st->wake.notify_all();
}

void host_resolver::resolve(state& st, entry& e) {
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  boost::system::error_code ec;
  const auto results = resolver.resolve(e.host, std::to_string(e.port), ec);
  {
    std::lock_guard lock(st.mutex);
    if (st.stopping) return;  // the gateway is going away: nothing to update or log
  }
  if (ec || results.empty()) {
    if (!e.failing) {
      spdlog::warn("downstream '{}': cannot resolve {}: {}{}", e.owner, e.host,
                   ec ? ec.message() : "no address",
                   e.address->resolved() ? " (keeping the last address)" : " (its calls fall back)");
    }
    e.failing = true;
    e.due = clock::now() + e.retry;
    e.retry = std::min(e.refresh, e.retry * 2);
    return;
  }
  // IPv4 preferred: "localhost" and dual-stack names then mean what most services listen on.
  const bool any_v4 = std::any_of(results.begin(), results.end(),
                                  [](const auto& r) { return r.endpoint().address().is_v4(); });
  std::vector<tcp::endpoint> endpoints;
  for (const auto& r : results) {
    if (r.endpoint().address().is_v4() == any_v4) endpoints.push_back(r.endpoint());
  }
  const bool had = e.address->resolved();
  if (e.address->set(endpoints) || e.failing) {
    const auto now_all = e.address->all();
    std::string listed;
    for (const auto& a : now_all) listed += (listed.empty() ? "" : ", ") + to_text(a);
    spdlog::info("downstream '{}': {} {} {}", e.owner, e.host, had ? "now resolves to" : "resolves to",
                 listed);
  }
  e.failing = false;
  e.retry = first_retry;
  e.due = clock::now() + e.refresh;
}

}  // namespace gateway
