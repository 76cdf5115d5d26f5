// Transfer codings of a request (RFC 9112 6.1, 6.3): chunked alone is usable; any other final coding
// leaves no length (400); chunked after a coding the gateway does not decode is 501. And the edge's
// refusals of a head's fields and target (admit_head), and folded lines (fold_watch).

#include "gateway/server/request_framing.hpp"

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>

#include <catch2/catch.hpp>

using namespace gateway;

TEST_CASE("request transfer codings: chunked alone is the one usable framing") {
  CHECK(transfer_coding_status(false, "") == 0);
  CHECK(transfer_coding_status(true, "chunked") == 0);
  CHECK(transfer_coding_status(true, "Chunked") == 0);
  CHECK(transfer_coding_status(true, " CHUNKED ") == 0);
}

TEST_CASE("request transfer codings: a final coding other than chunked is 400") {
  for (const char* v : {"", "gzip", "chunked, gzip", "identity", "x-custom", "chunked, chunked", "chunked,",
                        ",chunked", "gzip,,chunked", " ", "chunkedx"}) {
    INFO(v);
    CHECK(transfer_coding_status(true, v) == 400);
  }
}

TEST_CASE("request transfer codings: chunked after a coding not decoded here is 501") {
  for (const char* v : {"gzip, chunked", "deflate,chunked", "x-unknown, chunked", "gzip, br, chunked"}) {
    INFO(v);
    CHECK(transfer_coding_status(true, v) == 501);
  }
}

namespace {

namespace http = boost::beast::http;

// The head parsed by Beast, then judged by field_refusal(): "" when admitted, else the reason. "parse"
// when Beast refuses the head itself.
std::string refusal(const std::string& fields, const char* start_line = "GET / HTTP/1.1") {
  const std::string text = std::string(start_line) + "\r\n" + fields + "\r\n";
  http::request_parser<http::empty_body> parser;
  boost::system::error_code ec;
  parser.put(boost::asio::buffer(text), ec);
  if (ec || !parser.is_header_done()) return "parse";
  return std::string(field_refusal(parser.get()));
}

}  // namespace

TEST_CASE("request fields: framing lookalikes, length lists and repeated singletons are refused") {
  CHECK(refusal("Host: a\r\n").empty());
  CHECK(refusal("Host: a\r\nContent-Length: 10\r\n").empty());
  CHECK(refusal("Host: a\r\nX-Custom_Name: 1\r\nX-Content-Length-Hint: 3\r\n").empty());
  CHECK(refusal("Host: a\r\nAuthorization: Bearer a\r\nCookie: a=1\r\nCookie: b=2\r\n").empty());
  CHECK(refusal("Host: [::1]:8080\r\n").empty());
  for (const char* fields :
       {"Host: a\r\nContent-Length: 1000,1000\r\n", "Host: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n",
        "Host: a\r\nTransfer_Encoding: chunked\r\n", "Host: a\r\nContent_Length: 5\r\n",
        "Host: a\r\nContent--Length: 5\r\n", "Host: a\r\ncontent.length: 5\r\n",
        "Host: a\r\nTransfer-Encoding-: chunked\r\n", "Host: a\r\n-Host: b\r\n", "Host: a\r\nHo_st: b\r\n",
        "Host: a\r\nConnection_: close\r\n", "", "Host: a\r\nHost: evil.example\r\n",
        "Host: a.example, evil.example\r\n", "Host: user@a\r\n", "Host: a/b\r\n",
        "Host: a\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n",
        "Host: a\r\nProxy-Authorization: Basic a\r\nProxy-Authorization: Basic b\r\n"}) {
    INFO(fields);
    const auto why = refusal(fields);
    CHECK_FALSE(why.empty());
  }
  // HTTP/1.0 has no Host requirement; a repeated Host is refused all the same.
  CHECK(refusal("", "GET / HTTP/1.0").empty());
  CHECK_FALSE(refusal("Host: a\r\nHost: b\r\n", "GET / HTTP/1.0").empty());
}

TEST_CASE("request fields: names Beast itself refuses stay refused") {
  for (const char* fields : {"Host: a\r\nContent-Length : 5\r\n", "Host: a\r\nContent-Length\xc2\xa0: 5\r\n",
                             " Content-Length: 5\r\nHost: a\r\n", "Host: a\r\n:x: 1\r\n"}) {
    INFO(fields);
    CHECK(refusal(fields) == "parse");
  }
}

TEST_CASE("request heads: admit_head makes the target canonical and the absolute form's authority Host") {
  http::request_parser<http::empty_body> parser;
  boost::system::error_code ec;
  const std::string text = "GET http://b.example/files/%2e%2e/x HTTP/1.1\r\nHost: a.example\r\n\r\n";
  parser.put(boost::asio::buffer(text), ec);
  REQUIRE(parser.is_header_done());
  auto& head = parser.get();
  CHECK(admit_head(head).empty());
  CHECK(head.target() == "/x");
  CHECK(head[http::field::host] == "b.example");

  http::request_parser<http::empty_body> refused;
  const std::string bad = "GET /files/..%5c..%5cx HTTP/1.1\r\nHost: a\r\n\r\n";
  refused.put(boost::asio::buffer(bad), ec);
  REQUIRE(refused.is_header_done());
  CHECK_FALSE(admit_head(refused.get()).empty());
}

TEST_CASE("request heads: a folded field line is seen however the head arrives") {
  const std::string folded = "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n Content-Length: 5\r\n\r\n";
  const std::string plain = "GET / HTTP/1.1\r\nHost: a\r\nX: a b\r\n\r\n   body";
  for (std::size_t cut = 1; cut < folded.size(); ++cut) {
    fold_watch w;
    w.taken(folded.data(), cut);
    w.taken(folded.data() + cut, folded.size() - cut);
    INFO(cut);
    CHECK(w.folded());
  }
  fold_watch clean;
  clean.taken(plain.data(), plain.find("\r\n\r\n") + 4);  // the head only: a body may start with spaces
  CHECK_FALSE(clean.folded());
}
