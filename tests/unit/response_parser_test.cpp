// The downstream response parser on whole answers and on the same answers cut at every byte: framing
// (length, chunked, end of connection), keep-alive, limits and the malformed heads it must refuse.

#include "gateway/downstream/response_parser.hpp"

#include <boost/beast/http/error.hpp>
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

using namespace gateway;
namespace http = boost::beast::http;
using boost::system::error_code;

namespace {

struct outcome {
  error_code ec;  // the first error other than need_more, or partial_message at the end
  bool done = false;
  unsigned status = 0;
  std::string body;
  bool keep_alive = false;
};

// Feeds `wire` in pieces of `step` bytes (0: all at once), as a connection would: unconsumed bytes are
// presented again with the next piece. `eof`: the connection ends after the last byte.
outcome parse(const std::string& wire, std::size_t step = 0, bool eof = false,
              std::size_t body_limit = 1 << 20, std::size_t header_limit = 8192) {
  response_parser p(body_limit, header_limit);
  outcome o;
  std::string pending;
  std::size_t at = 0;
  while (at < wire.size() && !p.is_done()) {
    const auto n = step == 0 ? wire.size() : std::min(step, wire.size() - at);
    pending.append(wire, at, n);
    at += n;
    error_code ec;
    pending.erase(0, p.put(pending, ec));
    if (ec && ec != http::error::need_more) {
      o.ec = ec;
      return o;
    }
  }
  if (eof && !p.is_done()) p.put_eof(o.ec);
  if (!p.is_done() && !o.ec) o.ec = http::error::partial_message;
  o.done = p.is_done();
  o.status = p.status();
  o.body = p.body();
  o.keep_alive = p.keep_alive();
  return o;
}

// The same answer parsed whole and cut at every size from 1 byte up must give the same result.
void check_all_cuts(const std::string& wire, unsigned status, const std::string& body, bool keep_alive,
                    bool eof = false) {
  for (std::size_t step = 0; step <= wire.size(); ++step) {
    INFO("step " << step);
    const auto o = parse(wire, step, eof);
    REQUIRE(!o.ec);
    CHECK(o.done);
    CHECK(o.status == status);
    CHECK(o.body == body);
    CHECK(o.keep_alive == keep_alive);
  }
}

}  // namespace

TEST_CASE("response parser: Content-Length framing, kept alive, every cut") {
  check_all_cuts(
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"a\":\"xyz\"}", 200,
      "{\"a\":\"xyz\"}", true);
  check_all_cuts("HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n", 503, "", true);
  check_all_cuts("HTTP/1.1 200\r\nContent-Length: 2\r\n\r\n{}", 200, "{}", true);  // no reason phrase
}

TEST_CASE("response parser: chunked framing with extensions and trailers, every cut") {
  check_all_cuts(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
      "5;name=value\r\n{\"a\":\r\nA \r\n\"0123456\"}\r\n0\r\nX-Trailer: 1\r\n\r\n",
      200, "{\"a\":\"0123456\"}", true);
  check_all_cuts("HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 200, "{}",
                 true);
}

TEST_CASE("response parser: keep-alive follows the version and the Connection field") {
  CHECK(!parse("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}").keep_alive);
  CHECK(!parse("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}").keep_alive);
  CHECK(parse("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\n{}").keep_alive);
  CHECK(!parse("HTTP/1.1 200 OK\r\nConnection: upgrade, close\r\nContent-Length: 2\r\n\r\n{}").keep_alive);
}

TEST_CASE("response parser: field names match without regard to case, and only in full") {
  CHECK(parse("HTTP/1.1 200 OK\r\nCONTENT-LENGTH: 2\r\n\r\n{}").body == "{}");
  CHECK(parse("HTTP/1.1 200 OK\r\ncOnTeNt-lEnGtH: 2\r\nCONNECTION: KEEP-ALIVE\r\n\r\n{}").done);
  CHECK(parse("HTTP/1.0 200 OK\r\nConnection: kEEP-aLIVE\r\nContent-Length: 2\r\n\r\n{}").keep_alive);
  CHECK(!parse("HTTP/1.0 200 OK\r\nConnection: keep-alivf\r\nContent-Length: 2\r\n\r\n{}").keep_alive);
  // One byte off, first or last of each eight: an ordinary field, so the body runs to the end.
  for (const char* name : {"Content-Lengtx", "Xontent-Length", "Content-Xength", "Transfer-Encodinx",
                           "Transfer-Xncoding", "Connectiox"}) {
    INFO(name);
    const auto o = parse(
        std::string("HTTP/1.1 200 OK\r\n") + name + ": 2\r\nConnection: keep-alive\r\n\r\n{}x", 0, true);
    CHECK(o.done);
    CHECK(o.body == "{}x");
    CHECK(!o.keep_alive);
  }
  // The end of the head found wherever it falls against the 16-byte steps of the search.
  for (std::size_t pad = 0; pad < 40; ++pad) {
    INFO("pad " << pad);
    check_all_cuts("HTTP/1.1 200 OK\r\nX: " + std::string(pad, 'y') + "\r\nContent-Length: 2\r\n\r\n{}", 200,
                   "{}", true);
  }
}

TEST_CASE("response parser: a body framed by the end of the connection") {
  check_all_cuts("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"to\":\"eof\"}", 200,
                 "{\"to\":\"eof\"}", false, true);
  const auto cut = parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}", 0, true);
  CHECK(cut.ec == http::error::partial_message);
  CHECK(parse("HTTP/1.1 200 OK\r\nContent-Le", 0, true).ec == http::error::partial_message);
}

TEST_CASE("response parser: no body for 1xx, 204 and 304") {
  CHECK(parse("HTTP/1.1 204 No Content\r\n\r\n").done);
  CHECK(parse("HTTP/1.1 304 Not Modified\r\nContent-Length: 12\r\n\r\n").done);
  CHECK(parse("HTTP/1.1 100 Continue\r\n\r\n").status == 100);
}

TEST_CASE("response parser: limits") {
  CHECK(parse("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n", 0, false, 10).ec == http::error::body_limit);
  CHECK(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n123456\r\n6\r\n123456\r\n0\r\n\r\n",
              0, false, 10)
            .ec == http::error::body_limit);
  CHECK(parse("HTTP/1.1 200 OK\r\n\r\n0123456789A", 0, true, 10).ec == http::error::body_limit);
  const std::string big_head = "HTTP/1.1 200 OK\r\nX: " + std::string(9000, 'a') + "\r\n\r\n";
  CHECK(parse(big_head).ec == http::error::header_limit);
  CHECK(parse(big_head, 100).ec == http::error::header_limit);  // without waiting for its end
  const std::string long_chunk_line =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" + std::string(5000, 'x');
  CHECK(parse(long_chunk_line, 64).ec == http::error::bad_chunk);
}

TEST_CASE("response parser: malformed answers are refused") {
  const auto refused = [](const std::string& wire) {
    const auto o = parse(wire, 0, true);
    INFO(wire);
    CHECK(o.ec);
    CHECK(o.ec != http::error::partial_message);
  };
  refused("HTTP/2 200 OK\r\nContent-Length: 0\r\n\r\n");
  refused("HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n");
  refused("HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n");
  refused("HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n");
  refused("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n");
  refused("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}");
  refused("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n");
  refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n{}");
  refused("HTTP/1.1 200 OK\r\nBad Name: x\r\nContent-Length: 0\r\n\r\n");
  refused("HTTP/1.1 200 OK\r\nX: a\r\n folded\r\nContent-Length: 0\r\n\r\n");
  refused("HTTP/1.1 200 OK\r\nX: a\rb\r\nContent-Length: 0\r\n\r\n");
  refused(std::string("HTTP/1.1 200 OK\r\nX: a\0b\r\nContent-Length: 0\r\n\r\n", 46));
  refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n");
  refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n");
  refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2 x\r\n{}\r\n0\r\n\r\n");
  refused("garbage\r\n\r\n");
}

TEST_CASE("response parser: got_some tells a connection closed before any byte from a cut answer") {
  response_parser p(100, 100);
  CHECK(!p.got_some());
  error_code ec;
  p.put("HTTP/1.1 2", ec);
  CHECK(ec == http::error::need_more);
  CHECK(p.got_some());
}

TEST_CASE("response parser: mutated answers, cut anywhere, never overrun or exceed the body limit") {
  const std::vector<std::string> bases = {
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"a\":\"xyz\"}",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\n{\"a\":\r\n6\r\n\"bcd\"}\r\n0\r\nT: "
      "1\r\n\r\n",
      "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}",
      "HTTP/1.1 200 OK\r\n\r\n{\"to\":\"eof\"}",
  };
  const std::string inserts[] = {"\r\n",
                                 "\r\n\r\n",
                                 ":",
                                 ";",
                                 "0",
                                 "F",
                                 "ffffffffffffffff",
                                 "Content-Length: 7\r\n",
                                 "Transfer-Encoding: chunked\r\n",
                                 " ",
                                 "\t",
                                 std::string(1, '\0')};
  std::mt19937 rng(42);
  const auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  constexpr std::size_t body_limit = 16;
  for (int round = 0; round < 20000; ++round) {
    std::string wire = bases[pick(bases.size())];
    for (std::size_t k = 1 + pick(4); k > 0; --k) {
      const auto at = pick(wire.size() + 1);
      switch (pick(4)) {
        case 0:
          if (at < wire.size()) wire[at] = static_cast<char>(pick(256));
          break;
        case 1:
          wire.insert(at, inserts[pick(std::size(inserts))]);
          break;
        case 2:
          wire.erase(at, pick(8));
          break;
        default:
          wire += wire.substr(at);
      }
    }
    response_parser p(body_limit, 256);
    std::string pending;
    std::size_t at = 0;
    error_code ec;
    while (at < wire.size() && !p.is_done() && (!ec || ec == http::error::need_more)) {
      const auto n = std::min(1 + pick(40), wire.size() - at);
      pending.append(wire, at, n);
      at += n;
      const auto used = p.put(pending, ec);
      REQUIRE(used <= pending.size());
      pending.erase(0, used);
    }
    if (!p.is_done() && (!ec || ec == http::error::need_more)) p.put_eof(ec);
    CHECK(p.body().size() <= body_limit);
    if (p.is_done()) CHECK(p.status() >= 100);
  }
}
