// read_readiness on real loopback sockets and a real io_context: when it reports input, how an abort
// arrives, and that a queued wait never outlives what owns it (ASan/LSan check the memory side).

#include "gateway/core/read_readiness.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>

#include <sys/socket.h>

#include <chrono>
#include <optional>
#include <string>

using namespace gateway;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

namespace {

// A connected pair of sockets on one io_context.
struct socket_pair {
  net::io_context ioc{1};
  tcp::socket local{ioc};
  tcp::socket peer{ioc};
  // Runs the loop until `done()` or about a second has passed (restarting it when it runs out of work).
  template <class Pred>
  void run_until(Pred done) {
    for (int i = 0; i < 100 && !done(); ++i) {
      ioc.restart();
      ioc.run_for(10ms);
    }
  }
  socket_pair() {
    tcp::acceptor acceptor(ioc, tcp::endpoint(net::ip::address_v4::loopback(), 0));
    local.connect(acceptor.local_endpoint());
    acceptor.accept(peer);
    local.non_blocking(true);
  }
};

struct recorder final : read_readiness::listener {
  int calls = 0;
  error_code last;
  void on_readable(const error_code& ec) override {
    ++calls;
    last = ec;
  }
};

std::string drain(tcp::socket& s) {
  std::string out;
  char buf[64];
  for (;;) {
    const auto n = ::recv(s.native_handle(), buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace

TEST_CASE("read_readiness: reports input arriving after the wait, once per wait, then end of stream") {
  socket_pair p;
  recorder r;
  read_readiness readiness(p.local);
  readiness.wait(r);
  CHECK(readiness.waiting());
  p.ioc.run_for(50ms);
  CHECK(r.calls == 0);  // nothing to read: the wait stays queued

  net::write(p.peer, net::buffer(std::string("hello")));
  p.run_until([&] { return r.calls > 0; });
  REQUIRE(r.calls == 1);
  CHECK(!r.last);
  CHECK(!readiness.waiting());
  CHECK(drain(p.local) == "hello");

  readiness.wait(r);
  net::write(p.peer, net::buffer(std::string("again")));
  p.run_until([&] { return r.calls > 1; });
  REQUIRE(r.calls == 2);
  CHECK(drain(p.local) == "again");

  readiness.wait(r);
  p.peer.close();
  p.run_until([&] { return r.calls > 2; });
  REQUIRE(r.calls == 3);
  char byte = 0;
  CHECK(::recv(p.local.native_handle(), &byte, 1, MSG_DONTWAIT) == 0);  // end of stream
}

TEST_CASE("read_readiness: closing the socket aborts the wait") {
  socket_pair p;
  recorder r;
  read_readiness readiness(p.local);
  readiness.wait(r);
  p.local.close();
  p.ioc.run_for(50ms);
  REQUIRE(r.calls == 1);
  CHECK(r.last == net::error::operation_aborted);
}

TEST_CASE("read_readiness: destroyed with a wait queued, the wait is dropped without a call") {
  recorder r;
  SECTION("the socket closed first: the aborted wait frees itself") {
    socket_pair p;
    std::optional<read_readiness> readiness(std::in_place, p.local);
    readiness->wait(r);
    p.local.close();
    readiness.reset();
    p.ioc.run_for(50ms);
  }
  SECTION("the io_context goes with the wait still queued") {
    socket_pair p;
    read_readiness readiness(p.local);
    readiness.wait(r);
    p.local.close();
  }
  CHECK(r.calls == 0);
}
