// The coalescer on a real io_context: followers get a copy of their leader's result, a follower's own
// cancellation reports at once, a cancelled leader hands over to its first follower without running
// that follower's call (or its report) inside the leader's report, and an answer that is its own client's
// (a cookie, a Vary beyond the key) is not copied: every follower makes a call of its own.

#include "gateway/downstream/call_coalescer.hpp"
#include "gateway/downstream/share_key.hpp"

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
  std::vector<std::string> leads;  // what each started call leads ("": nobody)
  bool fail_at_once = false;       // a started call reports before its start returns
  call_coalescer coalescer{ioc.get_executor(),
                           [this](const call_request&, call_sink& sink, std::size_t index, std::string lead) {
                             ++started;
                             leads.push_back(std::move(lead));
                             if (fail_at_once) sink.call_finished(index, with(call_outcome::error));
                           }};
};

std::string key_of(std::string_view target) {
  cancel_source unused;
  return share_key(request_for(target, unused));
}

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
  f.coalescer.leader_done(key_of("/x"), with(call_outcome::ok));
  CHECK(b.told.empty());
  f.ioc.poll();
  CHECK(b.told == std::vector<call_outcome>{call_outcome::ok});
}

TEST_CASE("coalescer: a follower's own cancellation reports it at once, the leader goes on") {
  fixture f;
  cancel_source ca, cb;
  recording_sink a, b;
  f.coalescer.start(request_for("/x", ca), a, 0);
  f.coalescer.start(request_for("/x", cb), b, 0);
  cb.request_cancel(cancel_reason::client_gone);
  CHECK(b.told == std::vector<call_outcome>{call_outcome::cancelled});
  f.coalescer.leader_done(key_of("/x"), with(call_outcome::ok));
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
  f.coalescer.leader_done(key_of("/x"), with(call_outcome::cancelled));
  // Nothing of the follower runs inside the leader's report (its call could report, and resume its
  // request's coroutine, while the leader still has work to do).
  CHECK(f.started == 1);
  CHECK(b.told.empty());
  f.ioc.poll();
  CHECK(f.started == 2);
  CHECK(b.told == std::vector<call_outcome>{call_outcome::error});
  // The other follower follows the new call; it ends with that call's report.
  CHECK(c.told.empty());
  f.coalescer.leader_done(key_of("/x"), with(call_outcome::error));
  f.ioc.restart();
  f.ioc.poll();
  CHECK(c.told == std::vector<call_outcome>{call_outcome::error});
}

TEST_CASE("coalescer: a call leads under its share key, and only calls with that key follow it") {
  fixture f;
  cancel_source ca, cb, cc;
  recording_sink a, b, c;
  auto with_field = request_for("/x", cc);
  with_field.headers = "\r\nX-Forwarded-Host: tenant-b.example";
  f.coalescer.start(request_for("/x", ca), a, 0);
  f.coalescer.start(request_for("/x", cb), b, 0);
  f.coalescer.start(with_field, c, 0);  // sends another field: leads its own
  REQUIRE(f.leads.size() == 2);
  CHECK(f.leads[0] == key_of("/x"));
  CHECK(f.leads[1] == share_key(with_field));
  CHECK(f.coalescer.coalesced() == 1);
}

TEST_CASE("coalescer: an answer that is its own client's is not copied, each follower calls, at once") {
  const auto check_own_calls = [](call_result answer) {
    fixture f;
    cancel_source ca, cb, cc;
    recording_sink a, b, c;
    f.coalescer.start(request_for("/x", ca), a, 0);
    f.coalescer.start(request_for("/x", cb), b, 0);
    f.coalescer.start(request_for("/x", cc), c, 0);
    f.fail_at_once = true;
    f.coalescer.leader_done(key_of("/x"), answer);
    CHECK(f.started == 1);  // nothing started inside the leader's report
    f.ioc.poll();
    // Both followers made a call of their own, leading nobody; neither got the leader's answer.
    CHECK(f.leads == std::vector<std::string>{key_of("/x"), "", ""});
    CHECK(b.told == std::vector<call_outcome>{call_outcome::error});
    CHECK(c.told == std::vector<call_outcome>{call_outcome::error});
    // The next call for the key leads afresh.
    cancel_source cd;
    recording_sink d;
    f.coalescer.start(request_for("/x", cd), d, 0);
    CHECK(f.leads.back() == key_of("/x"));
  };
  SECTION("it sets a cookie its client gets") {
    auto answer = with(call_outcome::ok);
    answer.headers = "Set-Cookie: sess=v1\r\n";
    answer.sets_cookie = true;
    check_own_calls(answer);
  }
  SECTION("it varies on more than the key") {
    auto answer = with(call_outcome::ok);
    answer.shareable = false;
    check_own_calls(answer);
  }
}
