// The fan-out on a real io_context with downstreams written for the test: a call that cannot be started
// (out of memory) fails the request only after the calls already started have been cancelled and have
// finished (they point at the fan-out), a failed required call settles the answer at once, a call's own
// timeout and the request's deadline cut their calls, the fan-out's timer never outlives it, and cancel()
// (the client gone) ends the fan-out only after its own loop, also when calls finish inside it.

#include "gateway/aggregate/fanout.hpp"
#include "gateway/config/config_loader.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <catch2/catch.hpp>

#include <array>
#include <memory>
#include <new>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

using namespace gateway;
namespace net = boost::asio;
using namespace std::chrono_literals;

namespace {

gateway_config three_calls(bool first_required, const std::string& first_timeout = "") {
  auto r = load_config_text(std::string(R"(
downstreams:
  d: {url: http://127.0.0.1:9}
routes:
  - path: /r
    deadline: 10s
    calls:
      - {name: a, downstream: d, path: /a, required: )") +
                                (first_required ? "true" : "false") +
                                (first_timeout.empty() ? "" : ", timeout: " + first_timeout) + R"(}
      - {name: b, downstream: d, path: /b}
      - {name: c, downstream: d, path: /c}
)",
                            "test.yaml");
  REQUIRE(r.errors.empty());
  return *r.config;
}

// Answers after `delay` (a timer), or at once as cancelled when its call is cancelled.
class timer_downstream final : public downstream {
 public:
  timer_downstream(net::io_context& ioc, std::chrono::milliseconds delay, bool ok)
      : ioc_(ioc), delay_(delay), ok_(ok) {}
  bool start(const call_request& request, call_sink& sink, std::size_t index) override {
    auto timer = std::make_shared<net::steady_timer>(ioc_, delay_);
    auto hook = std::make_shared<cancel_source::scoped_hook>(*request.cancel, [timer] { timer->cancel(); });
    ++started;
    timer->async_wait([this, timer, hook, &sink, index](const boost::system::error_code& ec) mutable {
      hook.reset();
      call_result r;
      r.outcome = ec ? call_outcome::cancelled : (ok_ ? call_outcome::ok : call_outcome::error);
      if (r.outcome == call_outcome::ok) r.body.text = "{}";
      if (r.outcome == call_outcome::error && status != 0) {  // an answer with that status
        r.status = status;
        r.error = status < 500 ? call_error::status_4xx : call_error::status_5xx;
      }
      ++finished;
      finish_order.push_back(index);
      sink.call_finished(index, std::move(r));
    });
    return true;
  }
  void close_idle(std::size_t) override {}
  unsigned status = 0;  // a failure answers with this status (0: none, a failure without an answer)
  int started = 0;
  int finished = 0;
  std::vector<std::size_t> finish_order;  // call indexes

 private:
  net::io_context& ioc_;
  std::chrono::milliseconds delay_;
  bool ok_;
};

// Never answers on its own: its call ends when it is cancelled, inside the cancel hook (or at once, when
// it starts cancelled).
class cancel_only_downstream final : public downstream {
 public:
  bool start(const call_request& request, call_sink& sink, std::size_t index) override {
    ++started;
    if (request.cancel->cancelled()) {
      finish(sink, index);
      return true;
    }
    hooks_.at(index).emplace(*request.cancel, [this, &sink, index] {
      hooks_[index].reset();
      finish(sink, index);
    });
    return true;
  }
  void close_idle(std::size_t) override {}
  int started = 0;
  int finished = 0;

 private:
  void finish(call_sink& sink, std::size_t index) {
    ++finished;
    call_result r;
    r.outcome = call_outcome::cancelled;
    sink.call_finished(index, std::move(r));
  }
  std::array<std::optional<cancel_source::scoped_hook>, 8> hooks_;
};

class throwing_downstream final : public downstream {
 public:
  bool start(const call_request&, call_sink&, std::size_t) override { throw std::bad_alloc(); }
  void close_idle(std::size_t) override {}
};

struct harness {
  net::io_context ioc{1};
  param_values params;
  fanout_request request(const gateway_config& cfg, const std::vector<downstream*>& targets) {
    fanout_request fr;
    fr.route = &std::get<aggregate_route>(cfg.routes[0].kind);
    fr.targets = &targets;
    fr.params = &params;
    fr.deadline = clock::now() + 10s;
    fr.request_id = "id";
    return fr;
  }
  // Runs `fr` in a coroutine of its own once the io_context runs; `results` gets what run() returns.
  void spawn_run(const fanout_request& fr, std::vector<call_result>& results) {
    net::spawn(
        ioc,
        [&fr, &results](net::yield_context yield) {
          fanout f(yield.get_executor());
          results = f.run(fr, yield);
        },
        [](std::exception_ptr e) {
          if (e) std::rethrow_exception(e);
        });
  }
};

}  // namespace

TEST_CASE("fanout: a call that cannot be started fails the request after the started ones have finished") {
  harness h;
  const auto cfg = three_calls(false);
  timer_downstream slow(h.ioc, 5s, true);
  throwing_downstream broken;
  std::vector<downstream*> targets{&slow, &broken, &slow};
  const auto fr = h.request(cfg, targets);
  bool threw = false;
  int finished_when_thrown = -1;
  net::spawn(
      h.ioc,
      [&](net::yield_context yield) {
        fanout f(yield.get_executor());
        try {
          f.run(fr, yield);
        } catch (const std::bad_alloc&) {
          threw = true;
          finished_when_thrown = slow.finished;
        }
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  const auto start = std::chrono::steady_clock::now();
  h.ioc.run_for(10s);
  CHECK(threw);
  CHECK(slow.started == 1);  // the third call was never started
  CHECK(finished_when_thrown == 1);
  CHECK(std::chrono::steady_clock::now() - start < 4s);  // cancelled, not waited for
}

TEST_CASE("fanout: a failed required call cancels the others and ends the fan-out at once") {
  harness h;
  const auto cfg = three_calls(true);
  timer_downstream failing(h.ioc, 10ms, false);
  timer_downstream slow(h.ioc, 5s, true);
  std::vector<downstream*> targets{&failing, &slow, &slow};
  const auto fr = h.request(cfg, targets);
  std::vector<call_result> results;
  h.spawn_run(fr, results);
  const auto start = std::chrono::steady_clock::now();
  h.ioc.run_for(10s);
  REQUIRE(results.size() == 3);
  CHECK(results[0].outcome == call_outcome::error);
  CHECK(results[1].outcome == call_outcome::cancelled);
  CHECK(results[2].outcome == call_outcome::cancelled);
  CHECK(slow.finished == 2);
  CHECK(std::chrono::steady_clock::now() - start < 4s);
}

TEST_CASE("fanout: a call's own timeout cuts it first, the request's deadline the others") {
  harness h;
  const auto cfg = three_calls(false, "50ms");
  timer_downstream slow(h.ioc, 5s, true);
  std::vector<downstream*> targets{&slow, &slow, &slow};
  auto fr = h.request(cfg, targets);
  fr.deadline = clock::now() + 300ms;
  std::vector<call_result> results;
  h.spawn_run(fr, results);
  const auto start = std::chrono::steady_clock::now();
  h.ioc.run_for(10s);
  CHECK(h.ioc.stopped());  // nothing left behind: run_for returned for want of work
  CHECK(std::chrono::steady_clock::now() - start < 4s);
  REQUIRE(results.size() == 3);
  for (const auto& r : results) {
    CHECK(r.outcome == call_outcome::timeout);
    CHECK(std::string_view(r.detail) == "deadline");
  }
  REQUIRE(slow.finish_order.size() == 3);
  CHECK(slow.finish_order[0] == 0);
}

// The answers of all calls and the fan-out's expired timer are queued in one pass of the reactor, the
// timer's handler last: it can no longer be cancelled when run() sees the last call finish, and run()
// must not end (freeing the fan-out, here on the coroutine's stack) before that handler has run.
TEST_CASE("fanout: a deadline that expires behind the last answer is waited for before the fan-out ends") {
  harness h;
  const auto cfg = three_calls(false);
  timer_downstream quick(h.ioc, 20ms, true);
  std::vector<downstream*> targets{&quick, &quick, &quick};
  auto fr = h.request(cfg, targets);
  fr.deadline = clock::now() + 60ms;
  std::vector<call_result> results;
  net::spawn(
      h.ioc,
      [&](net::yield_context yield) {
        fanout f(yield.get_executor());
        // Runs once run() waits: the I/O thread is busy past every call's answer and the deadline.
        net::post(h.ioc, [] { std::this_thread::sleep_for(150ms); });
        results = f.run(fr, yield);
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  h.ioc.run_for(10s);
  CHECK(h.ioc.stopped());
  REQUIRE(results.size() == 3);
  for (const auto& r : results) CHECK(r.outcome == call_outcome::ok);
}

TEST_CASE(
    "fanout: the first listed call that passes its answer decides and only calls that could come first are "
    "waited for") {
  harness h;
  auto r = load_config_text(R"(
downstreams:
  d: {url: http://127.0.0.1:9}
routes:
  - path: /r
    deadline: 10s
    calls:
      - {name: plain, downstream: d, path: /p}
      - {name: first, downstream: d, path: /a, pass_status: [403]}
      - {name: second, downstream: d, path: /b, pass_status: [401]}
      - {name: after, downstream: d, path: /c, required: true}
)",
                            "test.yaml");
  REQUIRE(r.errors.empty());
  const auto& cfg = *r.config;
  const auto& route = std::get<aggregate_route>(cfg.routes[0].kind);
  REQUIRE(route.passes_status);
  timer_downstream plain(h.ioc, 5s, true);         // optional, passes nothing: cancelled, not waited for
  timer_downstream forbidden(h.ioc, 80ms, false);  // listed first among those that pass, answers last
  forbidden.status = 403;
  timer_downstream unauthorised(h.ioc, 1ms, false);
  unauthorised.status = 401;
  timer_downstream after(h.ioc, 5s, true);  // listed after: cancelled at once, its failure decides nothing
  std::vector<downstream*> targets{&plain, &forbidden, &unauthorised, &after};
  const auto fr = h.request(cfg, targets);
  std::vector<call_result> results;
  h.spawn_run(fr, results);
  const auto start = std::chrono::steady_clock::now();
  h.ioc.run_for(10s);
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(h.ioc.stopped());
  CHECK(took >= 70ms);  // the first call that may pass was waited for
  CHECK(took < 4s);     // the others were not
  REQUIRE(results.size() == 4);
  CHECK(results[0].outcome == call_outcome::cancelled);
  CHECK(passes_to_client(route.calls[1], results[1]));
  CHECK(results[1].status == 403);
  CHECK(passes_to_client(route.calls[2], results[2]));
  CHECK(results[3].outcome == call_outcome::cancelled);
  // A status a call does not list is not passed.
  CHECK_FALSE(passes_to_client(route.calls[2], results[1]));
  CHECK_FALSE(passes_to_client(route.calls[0], results[2]));
}

// The client leaves while run() waits: every call ends inside cancel()'s loop, the last one too, and run()
// ends only after that loop (its wake-up deferred), not inside it on a fan-out the loop still uses.
TEST_CASE("fanout: calls that end inside cancel() end the fan-out only after cancel() has returned") {
  harness h;
  const auto cfg = three_calls(true);
  cancel_only_downstream hanging;
  std::vector<downstream*> targets{&hanging, &hanging, &hanging};
  const auto fr = h.request(cfg, targets);
  std::vector<call_result> results;
  bool cancel_returned = false;
  bool ended_after_cancel = false;
  net::spawn(
      h.ioc,
      [&](net::yield_context yield) {
        fanout f(yield.get_executor());
        // Runs once run() waits.
        net::post(h.ioc, [&] {
          f.cancel(cancel_reason::client_gone);
          cancel_returned = true;
        });
        results = f.run(fr, yield);
        ended_after_cancel = cancel_returned;
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  h.ioc.run_for(10s);
  CHECK(h.ioc.stopped());
  CHECK(ended_after_cancel);
  CHECK(hanging.finished == 3);
  REQUIRE(results.size() == 3);
  for (const auto& r : results) CHECK(r.outcome == call_outcome::cancelled);
}

TEST_CASE("fanout: cancel() while run() waits cuts the calls, which end later, and run() waits for them") {
  harness h;
  const auto cfg = three_calls(false);
  timer_downstream slow(h.ioc, 5s, true);
  std::vector<downstream*> targets{&slow, &slow, &slow};
  const auto fr = h.request(cfg, targets);
  std::vector<call_result> results;
  int finished_when_returned = -1;
  net::steady_timer client_leaves(h.ioc, 20ms);
  net::spawn(
      h.ioc,
      [&](net::yield_context yield) {
        fanout f(yield.get_executor());
        client_leaves.async_wait(
            [&](const boost::system::error_code&) { f.cancel(cancel_reason::client_gone); });
        results = f.run(fr, yield);
        finished_when_returned = slow.finished;
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  const auto start = std::chrono::steady_clock::now();
  h.ioc.run_for(10s);
  CHECK(h.ioc.stopped());
  CHECK(std::chrono::steady_clock::now() - start < 4s);
  CHECK(finished_when_returned == 3);
  REQUIRE(results.size() == 3);
  for (const auto& r : results) CHECK(r.outcome == call_outcome::cancelled);
}

TEST_CASE("fanout: a request cancelled before run() starts every call cancelled") {
  harness h;
  const auto cfg = three_calls(true);
  cancel_only_downstream hanging;
  std::vector<downstream*> targets{&hanging, &hanging, &hanging};
  const auto fr = h.request(cfg, targets);
  std::vector<call_result> results;
  net::spawn(
      h.ioc,
      [&](net::yield_context yield) {
        fanout f(yield.get_executor());
        f.cancel(cancel_reason::shutdown);
        results = f.run(fr, yield);
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  h.ioc.run_for(10s);
  CHECK(h.ioc.stopped());
  CHECK(hanging.started == 3);
  CHECK(hanging.finished == 3);
  REQUIRE(results.size() == 3);
  for (const auto& r : results) CHECK(r.outcome == call_outcome::cancelled);
}
