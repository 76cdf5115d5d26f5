#include "gateway/auth/jwks_fetcher.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/spawn.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>

namespace gateway {

namespace net = boost::asio;
namespace http = boost::beast::http;

namespace {

constexpr std::size_t max_jwks_bytes = 1024 * 1024;

// One GET of the JWKS: its keys, or null with `error`. Every step within `timeout` of the start.
std::shared_ptr<const jwk_set> fetch(net::io_context& ioc, const jwks_location& where,
                                     net::yield_context yield, std::string& error) {
  boost::system::error_code ec;
  net::ssl::stream<boost::beast::tcp_stream> stream(ioc, where.tls->native());
  auto& tcp = boost::beast::get_lowest_layer(stream);
  tcp.expires_after(where.timeout);
  net::ip::tcp::resolver resolver(ioc);
  const auto found = resolver.async_resolve(where.host, std::to_string(where.port), yield[ec]);
  if (ec) {
    error = "cannot resolve " + where.host + ": " + ec.message();
    return nullptr;
  }
  tcp.async_connect(found, yield[ec]);
  if (ec) {
    error = "cannot connect: " + ec.message();
    return nullptr;
  }
  if (!where.tls->prepare(stream.native_handle())) {
    error = "TLS setup failed";
    return nullptr;
  }
  stream.async_handshake(net::ssl::stream_base::client, yield[ec]);
  if (ec) {
    error = "TLS handshake failed: " + ec.message();
    return nullptr;
  }
  http::request<http::empty_body> request{http::verb::get, where.target, 11};
  request.set(http::field::host,
              where.port == 443 ? where.host : where.host + ":" + std::to_string(where.port));
  request.set(http::field::accept, "application/json");
  request.set(http::field::user_agent, "gateway-jwks");
  http::async_write(stream, request, yield[ec]);
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(max_jwks_bytes);
  if (!ec) http::async_read(stream, buffer, parser, yield[ec]);
  if (ec) {
    error = "no answer: " + ec.message();
    return nullptr;
  }
  const auto& answer = parser.get();
  if (answer.result_int() != 200) {
    error = "answered " + std::to_string(answer.result_int());
    return nullptr;
  }
  stream.async_shutdown(yield[ec]);  // a courtesy: the keys are in hand whatever it says
  return jwk_set::parse(answer.body(), error);
}

}  // namespace

jwks_fetcher::jwks_fetcher(jwks_location where)
    : where_(std::move(where)), ioc_(std::make_unique<net::io_context>(1)), wake_(*ioc_) {
  net::spawn(
      *ioc_, [this](net::yield_context yield) { run_loop(yield); },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  thread_ = std::thread([this] { run(); });
}

jwks_fetcher::~jwks_fetcher() {
  ioc_->stop();
  if (thread_.joinable()) thread_.join();
}

void jwks_fetcher::run() {
  try {
    ioc_->run();
  } catch (const std::exception& e) {
    spdlog::error("jwks {}: the fetcher stopped: {}", where_.url, e.what());
  }
}

bool jwks_fetcher::wait_first(microseconds bound) {
  std::unique_lock hold(first_lock_);
  return first_came_.wait_for(hold, bound, [this] { return first_; });
}

void jwks_fetcher::unknown_kid() {
  if (asked_.exchange(true, std::memory_order_acq_rel)) return;  // a wake is on its way already
  net::post(*ioc_, [this] { wake_.cancel(); });
}

void jwks_fetcher::run_loop(net::yield_context yield) {
  bool failing = false;
  for (;;) {
    asked_.store(false, std::memory_order_release);
    const auto started = clock::now();
    std::string error;
    auto keys = fetch(*ioc_, where_, yield, error);
    if (keys) {
      ++succeeded_;
      const auto before = keys_.load(std::memory_order_acquire);
      if (failing || !before || before->size() != keys->size())
        spdlog::info("jwks {}: {} keys", where_.url, keys->size());
      keys_.store(std::move(keys), std::memory_order_release);
      failing = false;
      {
        const std::lock_guard hold(first_lock_);
        first_ = true;
      }
      first_came_.notify_all();
    } else {
      ++failed_;
      if (!failing)
        spdlog::error("jwks {}: fetch failed: {}; {} until a fetch succeeds", where_.url, error,
                      keys_.load() ? "the last keys stay in use" : "its routes answer 503");
      failing = true;
    }
    // The next fetch: after `refresh`, or after min_refresh when this one failed or a token asks for it
    // (an unknown kid) — never sooner than min_refresh after this one started.
    // An ask that came during the fetch found no wait to cancel: it is honoured here.
    const auto earliest = started + where_.min_refresh;
    auto next = failing ? earliest : started + where_.refresh;
    if (asked_.load(std::memory_order_acquire)) next = std::min(next, earliest);
    wake_.expires_at(next);
    boost::system::error_code ec;
    wake_.async_wait(yield[ec]);
    if (ec) {  // cancelled by an ask: not before `earliest`
      wake_.expires_at(earliest);
      wake_.async_wait(yield[ec]);
    }
  }
}

}  // namespace gateway
