// The coalescer on a real io_context: followers get a copy of their leader's result, a follower's own
// cancellation reports at once, and a cancelled leader hands over to its first follower without running
// that follower's call (or its report) inside the leader's report.

#include "gateway/downstream/call_coalescer.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

using namespace gateway;

namespace {

struct recording_sink final : call_sink {
  std::vector<call_outcome> told;
  void call_finished(std::size_t, call_result&& result) override { told.push_back(result.outcome); }
};

call_request request_for(std::string_view target, cancel_source& cancel) {
  call_request r;
  r.target = target;
  r.cancel = &cancel;
  return r;
}

call_result with(call_outcome outcome) {
  call_result r;
  r.outcome = outcome;
  return r;
}

struct fixture {
  boost::asio::io_context ioc;
  int started = 0;
  bool fail_at_once = false;  // a started call reports before its start returns
  call_coalescer coalescer{ioc.get_executor(),
                           [this](const call_request&, call_sink& sink, std::size_t index) {
                             ++started;
                             if (fail_at_once) sink.call_finished(index, with(call_outcome::error));
                           }};
};

}  // namespace

TEST_CASE("coalescer: followers get a copy of the leader's result, posted") {
  fixture f;
  cancel_source ca, cb, cc;
  recording_sink a, b, c;
  f.coalescer.start(request_for("/x", ca), a, 0);
  f.coalescer.start(request_for("/x", cb), b, 0);
  f.coalescer.start(request_for("/y", cc), c, 0);  // another target leads its own
  CHECK(f.started == 2);
  CHECK(f.coalescer.coalesced() == 1);
  f.coalescer.leader_done("/x", with(call_outcome::ok));
  CHECK(b.told.empty());
  f.ioc.poll();
  CHECK(b.told == std::vector<call_outcome>{call_outcome::ok});
}

TEST_CASE("coalescer: a follower's own cancellation reports it at once; the leader goes on") {
  fixture f;
  cancel_source ca, cb;
  recording_sink a, b;
  f.coalescer.start(request_for("/x", ca), a, 0);
  f.coalescer.start(request_for("/x", cb), b, 0);
  cb.request_cancel(cancel_reason::client_gone);
  CHECK(b.told == std::vector<call_outcome>{call_outcome::cancelled});
  f.coalescer.leader_done("/x", with(call_outcome::ok));
  f.ioc.poll();
  CHECK(b.told.size() == 1);  // not told twice
}

TEST_CASE("coalescer: a cancelled leader's first follower gets a call of its own, started after the report") {
  fixture f;
  cancel_source ca, cb, cc;
  recording_sink a, b, c;
  f.coalescer.start(request_for("/x", ca), a, 0);
  f.coalescer.start(request_for("/x", cb), b, 0);
  f.coalescer.start(request_for("/x", cc), c, 0);
  f.fail_at_once = true;
  f.coalescer.leader_done("/x", with(call_outcome::cancelled));
  // Nothing of the follower runs inside the leader's report (its call could report, and resume its
  // request's coroutine, while the leader still has work to do).
  CHECK(f.started == 1);
  CHECK(b.told.empty());
  f.ioc.poll();
  CHECK(f.started == 2);
  CHECK(b.told == std::vector<call_outcome>{call_outcome::error});
  // The other follower follows the new call; it ends with that call's report.
  CHECK(c.told.empty());
  f.coalescer.leader_done("/x", with(call_outcome::error));
  f.ioc.restart();
  f.ioc.poll();
  CHECK(c.told == std::vector<call_outcome>{call_outcome::error});
}

TEST_CASE("answer key: answer-field policies are told apart by their contents not their addresses",
          "[coalesce]") {
  // Two policies alike in content at two addresses (as a configuration reload makes them): one key. A
  // policy that keeps other fields: another key, wherever it lives.
  const auto a =
      std::make_unique<response_header_policy>(response_header_policy{{"etag"}, {"session"}, true});
  const auto b =
      std::make_unique<response_header_policy>(response_header_policy{{"etag"}, {"session"}, true});
  const auto other = std::make_unique<response_header_policy>(response_header_policy{{"etag"}, {}, true});
  call_request request;
  request.target = "/coupon?sku=A1";
  request.answer_fields = a.get();
  const auto key_a = answer_key(request);
  request.answer_fields = b.get();
  CHECK(answer_key(request) == key_a);
  request.answer_fields = other.get();
  CHECK(answer_key(request) != key_a);
  request.answer_fields = nullptr;
  CHECK(answer_key(request) == "/coupon?sku=A1");
  CHECK(answer_key(request) != key_a);
}
