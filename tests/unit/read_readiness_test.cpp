// read_readiness on real loopback sockets and a real io_context: when it reports input, how an abort
// arrives, and that a queued wait never outlives what owns it (ASan/LSan check the memory side).

#include "gateway/runtime/read_readiness.hpp"

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

TEST_CASE("read_readiness: the listener may destroy its owner when told") {
  // The owner of a connection ends it from on_readable: closes the socket and destroys the read_readiness,
  // with or without having queued the next wait first.
  struct owner final : read_readiness::listener {
    tcp::socket& socket;
    std::optional<read_readiness> readiness;
    bool wait_again = false;
    int calls = 0;
    explicit owner(tcp::socket& s) : socket(s), readiness(std::in_place, s) {}
    void on_readable(const error_code&) override {
      ++calls;
      if (wait_again) readiness->wait(*this);
      socket.close();
      readiness.reset();
    }
  };
  socket_pair p;
  owner o(p.local);
  SECTION("with no wait queued") {}
  SECTION("with the next wait queued: it completes aborted later, without a call") {
    o.wait_again = true;
  }
  o.readiness->wait(o);
  net::write(p.peer, net::buffer(std::string("bye")));
  p.run_until([&] { return o.calls > 0; });
  p.ioc.restart();
  p.ioc.run_for(20ms);
  CHECK(o.calls == 1);
  CHECK_FALSE(o.readiness.has_value());
}

TEST_CASE("read_now: drained only when neither data nor an end of stream is left behind") {
  socket_pair s;
  report_input_left(s.local);
  boost::beast::flat_buffer buffer(4096);

  SECTION("a request that arrived alone leaves the socket drained") {
    net::write(s.peer, net::buffer(std::string("GET / HTTP/1.1\r\n\r\n")));
    const auto got = read_now(s.local, buffer, 1024);
    CHECK(got.bytes == 18);
    CHECK(got.drained);
    CHECK_FALSE(got.ec);
  }
  SECTION("an end of stream right behind the data is not drained (no edge would announce it)") {
    net::write(s.peer, net::buffer(std::string("GET / HTTP/1.1\r\n\r\n")));
    s.peer.shutdown(tcp::socket::shutdown_send);
    s.run_until([] { return false; });  // let the FIN arrive before the read
    const auto got = read_now(s.local, buffer, 1024);
    CHECK(got.bytes == 18);
    CHECK_FALSE(got.drained);
    CHECK(read_now(s.local, buffer, 1024).ec == net::error::eof);
  }
  SECTION("more data than the room: not drained until the last of it is read") {
    const std::string big(3000, 'x');
    net::write(s.peer, net::buffer(big));
    std::size_t total = 0;
    for (int reads = 0; reads < 10; ++reads) {
      boost::beast::flat_buffer small(1024);
      const auto got = read_now(s.local, small, 1024);
      REQUIRE(got.bytes > 0);
      total += got.bytes;
      CHECK(got.drained == (total == big.size()));
      if (got.drained) break;
    }
    CHECK(total == big.size());
  }
  SECTION("nothing there: would_block, drained") {
    const auto got = read_now(s.local, buffer, 1024);
    CHECK(got.ec == net::error::would_block);
    CHECK(got.drained);
  }
}
