#include "gateway/server/graceful_drain.hpp"

#include "gateway/config/config_json.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

#include <algorithm>

namespace gateway {

namespace net = boost::asio;
using boost::system::error_code;

graceful_drain::graceful_drain(net::io_context& ioc, const shutdown_settings& settings, server_state& state,
                               std::function<void()> hand_off_ports, std::function<void()> close_listener,
                               std::function<void()> stop)
    : ioc_(ioc),
      settings_(settings),
      state_(state),
      hand_off_ports_(std::move(hand_off_ports)),
      close_listener_(std::move(close_listener)),
      stop_(std::move(stop)),
      drain_timer_(ioc),
      shutdown_timer_(ioc) {}

void graceful_drain::begin() {
  if (state_.advance(server_phase::draining) >= server_phase::draining) return;  // or stopping
  spdlog::info(
      "drain: not ready; serving for {} more, then closing the listener (cancelling what is left after {})",
      format_duration(settings_.drain_delay), format_duration(settings_.timeout));
  net::post(ioc_, [this] {
    // The shutdown timeout counts from the signal; it cancels whatever is still running.
    shutdown_timer_.expires_after(settings_.timeout);
    shutdown_timer_.async_wait([this](error_code ec) {
      if (ec || state_.stopping()) return;
      spdlog::warn("drain: shutdown timeout; cancelling {} requests still in flight", state_.inflight.load());
      stop_();
    });
    const auto lead = std::min<std::chrono::steady_clock::duration>(settings_.drain_delay, port_handoff_lead);
    const auto close_at = std::chrono::steady_clock::now() + settings_.drain_delay;
    drain_timer_.expires_at(close_at - lead);
    drain_timer_.async_wait([this, close_at](error_code ec) {
      if (ec || state_.stopping()) return;
      hand_off_ports_();
      drain_timer_.expires_at(close_at);
      drain_timer_.async_wait([this](error_code late) {
        if (!late && !state_.stopping()) close_listener();
      });
    });
  });
}

void graceful_drain::cancel() {
  drain_timer_.cancel();
  shutdown_timer_.cancel();
}

void graceful_drain::close_listener() {
  state_.advance(server_phase::closing);
  close_listener_();
  spdlog::info("drain: listener closed; {} connections, {} requests in flight", state_.connections.load(),
               state_.inflight.load());
  wait_for_connections();
}

void graceful_drain::wait_for_connections() {
  if (state_.connections.load() == 0) {
    spdlog::info("drain: all connections closed");
    stop_();
    return;
  }
  drain_timer_.expires_after(std::chrono::milliseconds(20));
  drain_timer_.async_wait([this](error_code ec) {
    if (!ec && !state_.stopping()) wait_for_connections();
  });
}

}  // namespace gateway
