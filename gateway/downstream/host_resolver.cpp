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

std::optional<tcp::endpoint> resolved_address::get() const {
  std::lock_guard lock(mutex_);
  return endpoint_;
}

bool resolved_address::set(const tcp::endpoint& endpoint) {
  std::lock_guard lock(mutex_);
  if (endpoint_ == endpoint) return false;
  endpoint_ = endpoint;
  generation_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

host_resolver::~host_resolver() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<const resolved_address> host_resolver::add(const std::string& owner, const std::string& host,
                                                           std::uint16_t port, microseconds refresh) {
  boost::system::error_code ec;
  const auto literal = net::ip::make_address(host, ec);
  if (!ec) return std::make_shared<resolved_address>(tcp::endpoint(literal, port));
  auto address = std::make_shared<resolved_address>();
  std::lock_guard lock(mutex_);
  entries_.push_back({owner, host, port, refresh, address, clock::now(), first_retry, false, false});
  ++untried_;
  return address;
}

void host_resolver::start(microseconds budget) {
  if (entries_.empty() || thread_.joinable()) return;
  thread_ = std::thread([this] { run(); });
  std::unique_lock lock(mutex_);
  if (!wake_.wait_for(lock, budget, [this] { return untried_ == 0; })) {
    spdlog::warn("downstream names still resolving after {} ms; their calls fall back until they resolve",
                 std::chrono::duration_cast<milliseconds>(budget).count());
  }
}

void host_resolver::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    auto next = std::min_element(entries_.begin(), entries_.end(),
                                 [](const entry& a, const entry& b) { return a.due < b.due; });
    if (clock::now() < next->due) {
      wake_.wait_until(lock, next->due);
      continue;
    }
    entry& e = *next;
    lock.unlock();  // entries_ is fixed once started: `e` stays valid
    resolve(e);
    lock.lock();
    if (!e.tried) {
      e.tried = true;
      --untried_;
      wake_.notify_all();
    }
  }
}

void host_resolver::resolve(entry& e) {
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  boost::system::error_code ec;
  const auto results = resolver.resolve(e.host, std::to_string(e.port), ec);
  if (ec || results.empty()) {
    if (!e.failing) {
      spdlog::warn("downstream '{}': cannot resolve {}: {}{}", e.owner, e.host,
                   ec ? ec.message() : "no address",
                   e.address->get() ? " (keeping the last address)" : " (its calls fall back)");
    }
    e.failing = true;
    e.due = clock::now() + e.retry;
    e.retry = std::min(e.refresh, e.retry * 2);
    return;
  }
  // IPv4 preferred: "localhost" and dual-stack names then mean what most services listen on.
  auto chosen = results.begin();
  for (auto it = results.begin(); it != results.end(); ++it) {
    if (it->endpoint().address().is_v4()) {
      chosen = it;
      break;
    }
  }
  const auto endpoint = chosen->endpoint();
  const bool had = e.address->get().has_value();
  if (e.address->set(endpoint) || e.failing) {
    spdlog::info("downstream '{}': {} {} {}", e.owner, e.host, had ? "now resolves to" : "resolves to",
                 to_text(endpoint));
  }
  e.failing = false;
  e.retry = first_retry;
  e.due = clock::now() + e.refresh;
}

}  // namespace gateway
