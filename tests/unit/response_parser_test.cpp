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
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
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

TEST_CASE("response parser: no body for 204 and 304") {
  CHECK(parse("HTTP/1.1 204 No Content\r\n\r\n").done);
  CHECK(parse("HTTP/1.1 304 Not Modified\r\nContent-Length: 12\r\n\r\n").done);
}

// RFC 9110 15.2: a client skips interim responses; the final one is the answer. Taking a 1xx for the
// answer would leave the real one on the connection for the next request (another client's).
TEST_CASE("response parser: interim 1xx responses are skipped, every cut") {
  check_all_cuts(
      "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
      "HTTP/1.1 200 OK\r\nContent-Length: 18\r\n\r\n{\"answer_for\":\"a\"}",
      200, "{\"answer_for\":\"a\"}", true);
  check_all_cuts(
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n"
      "HTTP/1.1 103 Early Hints\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "2\r\n{}\r\n0\r\n\r\n",
      200, "{}", true);
  check_all_cuts("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n", 503, "",
                 true);
  // Only an interim response so far: not done, whatever follows later.
  CHECK(parse("HTTP/1.1 103 Early Hints\r\n\r\n").ec == http::error::partial_message);
  CHECK(!parse("HTTP/1.1 100 Continue\r\n\r\n").done);
  // 101 (we never ask to switch protocols) is refused, and so is an endless run of interim responses.
  CHECK(parse("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n").ec == http::error::bad_status);
  std::string many;
  for (int i = 0; i < 100; ++i) many += "HTTP/1.1 103 Early Hints\r\n\r\n";
  CHECK(parse(many + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}").ec == http::error::bad_status);
}

// RFC 9112 6.1, 6.3: the gateway decodes no transfer coding but chunked, so a body with any other coding
// (gzip alone, or applied before chunked) cannot be used; a final coding other than chunked has no length.
TEST_CASE("response parser: transfer codings other than one chunked are refused") {
  for (const char* te : {"gzip", "gzip, chunked", "chunked, gzip", "chunked, chunked", "identity", "x-custom",
                         "deflate,chunked", "chunked,"}) {
    INFO(te);
    CHECK(parse(std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: ") + te + "\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
                0, true)
              .ec == http::error::bad_transfer_encoding);
  }
  CHECK(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"
              "2\r\n{}\r\n0\r\n\r\n")
            .ec == http::error::bad_transfer_encoding);
  CHECK(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: \r\n\r\n{}", 0, true).ec ==
        http::error::bad_transfer_encoding);
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
  CHECK(p.put("", ec) == 0);
  CHECK(ec == http::error::need_more);
  CHECK(!p.got_some());
  p.put_eof(ec);  // no answer at all
  CHECK(ec == http::error::partial_message);
  CHECK(!p.got_some());
  CHECK(!p.is_done());

  response_parser cut(100, 100);
  cut.put("HTTP/1.1 2", ec);
  CHECK(ec == http::error::need_more);
  CHECK(cut.got_some());
  cut.put_eof(ec);
  CHECK(ec == http::error::partial_message);
  CHECK(cut.got_some());
  CHECK(!cut.is_done());
}

TEST_CASE("response parser: an answer ended by the connection after an interim response is cut") {
  CHECK(parse("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", 0, true).ec == http::error::partial_message);
  CHECK(parse("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n", 0, true).ec ==
        http::error::partial_message);
  const auto o = parse("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n{}", 0, true);
  CHECK(o.done);
  CHECK(o.body == "{}");
}

TEST_CASE("response parser: a complete answer takes nothing more") {
  response_parser p(100, 100);
  error_code ec;
  const std::string wire = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\n";
  CHECK(p.put(wire, ec) == wire.size() - 17);
  CHECK(!ec);
  REQUIRE(p.is_done());
  CHECK(p.put("HTTP/1.1 200 OK\r\n", ec) == 0);
  CHECK(!ec);
  p.put_eof(ec);
  CHECK(!ec);
  CHECK(p.is_done());
  CHECK(p.body() == "{}");
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

// Trailer fields are checked like header fields: a bare LF ends nothing (it must not let the section run
// into the next response), and a line that is not a field is refused.
TEST_CASE("response parser: trailers are fields ending in CRLF, every cut") {
  check_all_cuts(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nA: 1\r\nB-c: x y\r\n\r\n", 200,
      "{}", true);
  CHECK(
      parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nnot a field\r\n\r\n").ec ==
      http::error::bad_field);
  CHECK(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nA: 1\n\r\n").ec ==
        http::error::bad_field);
  CHECK(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\n"
              "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            .ec == http::error::bad_field);
  CHECK(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n" + std::string(200, 'x'),
              0, false, 1 << 20, 100)
            .ec == http::error::header_limit);
}

TEST_CASE("response parser: an HTTP/1.0 answer with Transfer-Encoding is not kept alive") {
  const auto o = parse(
      "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n2\r\n{}\r\n0\r\n\r\n");
  CHECK(o.done);
  CHECK(o.body == "{}");
  CHECK_FALSE(o.keep_alive);
}

// Forms Beast's parser refuses that the parser accepts (it hands them to Beast rewritten), and an empty
// chunked body arriving a byte at a time (Beast 1.81 asserts on its last chunk when given fewer than 5
// bytes of it: boostorg/beast pull request 2861).
TEST_CASE("response parser: status lines and chunk lines beyond Beast's grammar, every cut") {
  check_all_cuts("HTTP/1.1 200\r\nContent-Length: 2\r\n\r\n{}", 200, "{}", true);
  check_all_cuts("HTTP/1.2 200 OK\r\nContent-Length: 2\r\n\r\n{}", 200, "{}", true);
  check_all_cuts("HTTP/1.1 100\r\n\r\nHTTP/1.0 200\r\nContent-Length: 2\r\n\r\n{}", 200, "{}", false);
  check_all_cuts("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2 \r\n{}\r\n0 \r\nA: 1\r\n\r\n", 200,
                 "{}", true);
  check_all_cuts("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;a b\r\n{}\r\n0;a=\"x\r\n\r\n", 200,
                 "{}", true);
  check_all_cuts("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 200, "", true);
  check_all_cuts("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: 1\r\n\r\n", 200, "", true);
  CHECK(
      parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0000000000000002\r\n{}\r\n0\r\n\r\n").ec ==
      http::error::bad_chunk);
  CHECK(parse("HTTP/1.1 200 OK\r\nProxy-Connection: close\r\nContent-Length: 2\r\n\r\n{}").keep_alive);
}
