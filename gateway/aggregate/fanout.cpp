#include "gateway/aggregate/fanout.hpp"

#include "gateway/core/stack_cache.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace gateway {

namespace net = boost::asio;

void fanout::cancel(cancel_reason why) {
  if (cancelled_ == cancel_reason::none) cancelled_ = why;
  for (std::size_t i = 0; i < cancels_.size(); ++i) {
    if (!finished_[i]) cancels_[i].request_cancel(why);
  }
}

void fanout::run_call(std::size_t index, const fanout_request& request, net::yield_context yield) {
  const auto& call = request.route->calls[index];
  if (deadlines_[index] <= clock::now()) {  // no time left: don't bother the downstream
    results_[index].outcome = call_outcome::timeout;
    results_[index].detail = "no time left";
    return;
  }
  std::string target;
  if (!call.path.pieces().empty()) target.reserve(64);
  call.path.expand(target, [&](const std::string& name) -> std::string_view {
    const auto& params = request.route->params;
    for (std::size_t p = 0; p < params.size(); ++p) {
      if (params[p].name == name) return (*request.params)[p];
    }
    return {};
  });
  call_request req;
  req.target = target;
  req.params = request.params;
  req.param_specs = &request.route->params;
  req.deadline = deadlines_[index];
  req.request_id = request.request_id;
  req.traceparent = request.traceparent;
  req.worker = request.worker;
  req.cancel = &cancels_[index];
  auto result = (*request.targets)[index]->call(req, yield);
  if (result.outcome == call_outcome::cancelled && cancels_[index].reason() == cancel_reason::deadline) {
    result.outcome = call_outcome::timeout;
    result.detail = "deadline";
  }
  if (request.metrics) request.metrics->call_done(call.downstream_index, result.outcome, result.latency);
  results_[index] = std::move(result);
}

std::vector<call_result> fanout::run(const fanout_request& request, net::yield_context yield) {
  const std::size_t n = request.route->calls.size();
  results_.assign(n, call_result{});
  finished_.assign(n, false);
  cancels_.clear();
  cancels_.resize(n);
  pending_ = n;
  const auto now = clock::now();
  deadlines_.clear();
  for (const auto& call : request.route->calls) {
    deadlines_.push_back(call.timeout ? std::min(request.deadline, now + *call.timeout) : request.deadline);
  }
  if (cancelled_ != cancel_reason::none) {
    for (auto& c : cancels_) c.request_cancel(cancelled_);
  }

  const auto ex = yield.get_executor();
  for (std::size_t i = 0; i < n; ++i) {
    net::spawn(
        ex, std::allocator_arg, stack_cache(request.stack_size),
        [this, i, &request](net::yield_context child) {
          if (request.metrics) request.metrics->coroutine_started();
          try {
            run_call(i, request, child);
          } catch (const std::exception& e) {
            spdlog::error("call '{}' failed unexpectedly: {}", request.route->calls[i].name, e.what());
            results_[i] = call_result{};
            results_[i].detail = "internal error";
          }
          if (request.metrics) request.metrics->coroutine_ended();
          finished_[i] = true;
          if (--pending_ == 0) wake_.cancel();
        },
        [](std::exception_ptr e) {
          if (e) spdlog::critical("call coroutine ended with an exception");
        });
  }

  // One timer enforces every call's deadline: it sleeps until the earliest deadline of a call still
  // running, cancels the calls whose deadline has passed, and sleeps again. The last call to finish
  // wakes it for good. Calls finish promptly once cancelled (their socket or timer is cancelled).
  while (pending_ > 0) {
    auto next = clock::time_point::max();
    for (std::size_t i = 0; i < n; ++i) {
      if (!finished_[i] && !cancels_[i].cancelled()) next = std::min(next, deadlines_[i]);
    }
    wake_.expires_at(next);
    boost::system::error_code ec;
    wake_.async_wait(yield[ec]);
    if (pending_ == 0) break;
    const auto woke = clock::now();
    for (std::size_t i = 0; i < n; ++i) {
      if (!finished_[i] && deadlines_[i] <= woke) cancels_[i].request_cancel(cancel_reason::deadline);
    }
  }
  return std::move(results_);
}

}  // namespace gateway
