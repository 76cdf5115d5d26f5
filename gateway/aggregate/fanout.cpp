#include "gateway/aggregate/fanout.hpp"

#include <boost/context/fixedsize_stack.hpp>
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
  const auto call_deadline = call.timeout ? std::min(request.deadline, clock::now() + *call.timeout) : request.deadline;
  std::string target;
  target.reserve(64);
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
  req.deadline = call_deadline;
  req.request_id = request.request_id;
  req.traceparent = request.traceparent;
  req.worker = request.worker;
  req.cancel = &cancels_[index];
  auto result = (*request.targets)[index]->call(req, yield);
  if (result.outcome == call_outcome::cancelled && cancels_[index].reason() == cancel_reason::deadline) {
    result.outcome = call_outcome::timeout;
    result.detail = "deadline";
  }
  results_[index] = std::move(result);
}

std::vector<call_result> fanout::run(const fanout_request& request, net::yield_context yield) {
  const std::size_t n = request.route->calls.size();
  results_.assign(n, call_result{});
  finished_.assign(n, false);
  cancels_.clear();
  cancels_.resize(n);
  pending_ = n;
  if (cancelled_ != cancel_reason::none) {
    for (auto& c : cancels_) c.request_cancel(cancelled_);
  }

  const auto ex = yield.get_executor();
  for (std::size_t i = 0; i < n; ++i) {
    net::spawn(
        ex, std::allocator_arg, boost::context::fixedsize_stack(request.stack_size),
        [this, i, &request](net::yield_context child) {
          try {
            run_call(i, request, child);
          } catch (const std::exception& e) {
            spdlog::error("call '{}' failed unexpectedly: {}", request.route->calls[i].name, e.what());
            results_[i] = call_result{};
            results_[i].detail = "internal error";
          }
          finished_[i] = true;
          if (--pending_ == 0) wake_.cancel();
        },
        [](std::exception_ptr e) {
          if (e) spdlog::critical("call coroutine ended with an exception");
        });
  }

  // Wait for every call; at the deadline cancel the unfinished ones, then keep waiting for them
  // (they finish promptly once their sockets and timers are cancelled).
  wake_.expires_at(request.deadline);
  bool deadline_passed = false;
  while (pending_ > 0) {
    boost::system::error_code ec;
    wake_.async_wait(yield[ec]);
    if (pending_ == 0) break;
    if (!ec && !deadline_passed) {
      deadline_passed = true;
      cancel(cancel_reason::deadline);
      wake_.expires_at(clock::time_point::max());
    }
  }
  return std::move(results_);
}

}  // namespace gateway
