#include "gateway/aggregate/fanout.hpp"

#include "gateway/core/stack_cache.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace gateway {

namespace net = boost::asio;

fanout::~fanout() {
  if (queue_ != nullptr) queue_->remove(*this);  // a coroutine destroyed while it waited
}

void fanout::cancel(cancel_reason why) {
  if (cancelled_ == cancel_reason::none) cancelled_ = why;
  for (std::size_t i = 0; i < cancels_.size(); ++i) {
    if (!finished_[i]) cancels_[i].request_cancel(why);
  }
}

call_request fanout::make_request(std::size_t index, std::string& target) {
  const auto& request = *request_;
  const auto& call = request.route->calls[index];
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
  req.now = started_;
  req.request_id = request.request_id;
  req.traceparent = request.traceparent;
  req.worker = request.worker;
  req.cancel = &cancels_[index];
  return req;
}

void fanout::call_finished(std::size_t index, call_result&& result) {
  if (result.outcome == call_outcome::cancelled && cancels_[index].reason() == cancel_reason::deadline) {
    result.outcome = call_outcome::timeout;
    result.detail = "deadline";
  }
  if (request_->metrics)
    request_->metrics->call_done(request_->route->calls[index].downstream_index, result.outcome,
                                 result.latency);
  results_[index] = std::move(result);
  finished_[index] = 1;
  if (--pending_ == 0) wake_.notify();  // resumes run() here, last: it may end the request
}

void fanout::on_deadline() {
  wake_.notify();
}

void fanout::start_call(std::size_t index) {
  const auto& request = *request_;
  if (deadlines_[index] <= started_) {  // no time left: don't bother the downstream
    call_result result;
    result.outcome = call_outcome::timeout;
    result.detail = "no time left";
    return call_finished(index, std::move(result));
  }
  {
    // start() has used the target by the time it returns (an HTTP call copies it into its request head),
    // so one buffer per thread serves every call without an allocation each.
    thread_local std::string target;
    target.clear();
    if ((*request.targets)[index]->start(make_request(index, target), *this, index)) return;
  }
  // A downstream that needs a stack (SQL): its own coroutine.
  net::spawn(
      ex_, std::allocator_arg, stack_cache(request.stack_size),
      [this, index, &request](net::yield_context child) {
        if (request.metrics) request.metrics->coroutine_started();
        call_result result;
        try {
          std::string target;
          result = (*request.targets)[index]->call(make_request(index, target), child);
        } catch (const std::exception& e) {
          spdlog::error("call '{}' failed unexpectedly: {}", request.route->calls[index].name, e.what());
          result = call_result{};
          result.detail = "internal error";
        }
        if (request.metrics) request.metrics->coroutine_ended();
        call_finished(index, std::move(result));
      },
      [](std::exception_ptr e) {
        if (e) spdlog::critical("call coroutine ended with an exception");
      });
}

std::vector<call_result> fanout::run(const fanout_request& request, net::yield_context yield) {
  const std::size_t n = request.route->calls.size();
  results_.assign(n, call_result{});
  finished_.assign(n, 0);
  cancels_.clear();
  cancels_.resize(n);
  pending_ = n;
  started_ = clock::now();  // one reading serves every call's start
  deadlines_.clear();
  for (const auto& call : request.route->calls) {
    deadlines_.push_back(call.timeout ? std::min(request.deadline, started_ + *call.timeout)
                                      : request.deadline);
  }
  if (cancelled_ != cancel_reason::none) {
    for (auto& c : cancels_) c.request_cancel(cancelled_);
  }

  request_ = &request;
  for (std::size_t i = 0; i < n; ++i) start_call(i);

  // The I/O thread's deadline queue enforces every call's deadline: this fan-out waits until the earliest
  // deadline of a call still running, cancels the calls whose deadline has passed, and waits again. The
  // last call to finish wakes it for good. Calls finish promptly once cancelled (their socket or timer is
  // cancelled).
  queue_ = request.deadlines;
  while (pending_ > 0) {
    auto next = clock::time_point::max();
    for (std::size_t i = 0; i < n; ++i) {
      if (!finished_[i] && !cancels_[i].cancelled()) next = std::min(next, deadlines_[i]);
    }
    if (next != clock::time_point::max()) queue_->set(*this, next);
    wake_.wait(yield);
    queue_->remove(*this);
    if (pending_ == 0) break;
    const auto woke = clock::now();
    for (std::size_t i = 0; i < n; ++i) {
      if (!finished_[i] && deadlines_[i] <= woke) cancels_[i].request_cancel(cancel_reason::deadline);
    }
  }
  return std::move(results_);
}

}  // namespace gateway
