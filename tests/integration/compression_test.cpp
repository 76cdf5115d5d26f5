// Compression on both sides, through the real binaries: answers compressed for clients that accept gzip
// or deflate (inflated here with zlib itself), Vary, the size threshold, refusals by q-value, HEAD; and
// compressed downstream answers inflated and merged, while a zip bomb, a corrupt body and an unknown
// coding only degrade their entry.

#include "tests/support/offer_checks.hpp"
#include "tests/support/text_edit.hpp"

#include <zlib.h>

#include <string>

using namespace test_support;

namespace {

// The seed route against `mock`, answers compressed from `min_bytes` on (the seed answer has ~500 bytes).
std::string compressing_config(const mock_downstream& mock, const std::string& compression,
                               const std::string& downstream_extra = "") {
  seed_config cfg{mock.url()};
  cfg.downstream_extra = downstream_extra;
  return replace_once(cfg.yaml(), "  threads: 2\n", "  threads: 2\n  compression: " + compression + "\n");
}

// Inflates a body with zlib directly: windowBits 31 for gzip, 15 for the zlib format ("deflate").
std::string inflated(const std::string& body, int window_bits) {
  z_stream zs{};
  REQUIRE(inflateInit2(&zs, window_bits) == Z_OK);
  std::string out(1 << 20, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  zs.avail_in = static_cast<uInt>(body.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  const bool all_read = zs.avail_in == 0;
  inflateEnd(&zs);
  REQUIRE(rc == Z_STREAM_END);
  CHECK(all_read);
  return out;
}

// The head of the answer to a HEAD request (the connection closed by the gateway after it); whatever
// followed the head lands in `after`.
http_response head_request(std::uint16_t port, const std::string& target, const std::string& fields,
                           std::string& after) {
  http_connection conn(port);
  conn.send_raw("HEAD " + target + " HTTP/1.1\r\nHost: x\r\n" + fields + "Connection: close\r\n\r\n");
  std::string raw;
  REQUIRE(conn.wait_closed_by_peer(milliseconds(5000), &raw));
  const auto end = raw.find("\r\n\r\n");
  REQUIRE(end != std::string::npos);
  after = raw.substr(end + 4);
  http_response res;
  res.status = std::stoi(raw.substr(9, 3));
  std::size_t at = raw.find("\r\n") + 2;
  while (at < end) {
    const auto eol = raw.find("\r\n", at);
    const auto line = raw.substr(at, eol - at);
    const auto colon = line.find(':');
    res.headers.emplace_back(line.substr(0, colon), line.substr(colon + 2));
    at = eol + 2;
  }
  return res;
}

}  // namespace

TEST_CASE("compression: a client that accepts gzip or deflate gets the same answer compressed",
          "[compression]") {
  mock_downstream mock({"--delay", "1ms"});
  gateway_process gw(compressing_config(mock, "{min_bytes: 64}"));
  const auto target = offer_target("Z1");

  const auto plain = http_get(gw.port(), target);
  check_offer(plain, "Z1");
  CHECK(plain.header("vary") == "Accept-Encoding");
  CHECK_FALSE(plain.has_header("content-encoding"));

  SECTION("gzip") {
    auto res = http_get(gw.port(), target, {{"Accept-Encoding", "gzip, deflate, br"}});
    REQUIRE(res.status == 200);
    CHECK(res.header("content-encoding") == "gzip");
    CHECK(res.header("vary") == "Accept-Encoding");
    CHECK(res.header("content-length") == std::to_string(res.body.size()));
    CHECK(res.body.size() < plain.body.size());
    res.body = inflated(res.body, 15 + 16);
    CHECK(res.body == plain.body);
    check_offer(res, "Z1");
  }
  SECTION("deflate (the zlib format)") {
    auto res = http_get(gw.port(), target, {{"Accept-Encoding", "gzip;q=0.5, DEFLATE"}});
    REQUIRE(res.status == 200);
    CHECK(res.header("content-encoding") == "deflate");
    CHECK(res.header("content-length") == std::to_string(res.body.size()));
    CHECK(inflated(res.body, 15) == plain.body);
  }
  SECTION("refused by q-value, or nothing known accepted: plain, with Vary") {
    for (const char* accept : {"gzip;q=0", "gzip;q=0, deflate;q=0", "*;q=0", "br, zstd", "identity"}) {
      INFO("Accept-Encoding: " << accept);
      const auto res = http_get(gw.port(), target, {{"Accept-Encoding", accept}});
      CHECK_FALSE(res.has_header("content-encoding"));
      CHECK(res.header("vary") == "Accept-Encoding");
      CHECK(res.body == plain.body);
    }
  }
  SECTION("a refusal in a second Accept-Encoding field counts") {
    const auto res =
        http_get(gw.port(), target, {{"Accept-Encoding", "deflate;q=0"}, {"Accept-Encoding", "gzip;q=0"}});
    CHECK_FALSE(res.has_header("content-encoding"));
    CHECK(res.body == plain.body);
  }
  SECTION("HEAD carries the headers of GET, and no body") {
    const auto get = http_get(gw.port(), target, {{"Accept-Encoding", "gzip"}});
    std::string after;
    const auto head = head_request(gw.port(), target, "Accept-Encoding: gzip\r\n", after);
    CHECK(head.status == 200);
    CHECK(after.empty());
    for (const char* name : {"content-type", "content-encoding", "content-length", "vary"}) {
      INFO(name);
      CHECK(head.header(name).value_or("<absent>") == get.header(name).value_or("<none>"));
    }
  }
  SECTION("error answers are small: not compressed, Vary still sent for the route") {
    const auto res = http_get(gw.port(), "/api/offer/aggregate", {{"Accept-Encoding", "gzip"}});
    check_error(res, 400);
    CHECK_FALSE(res.has_header("content-encoding"));
    CHECK(res.header("vary") == "Accept-Encoding");
    const auto unrouted = http_get(gw.port(), "/nope", {{"Accept-Encoding", "gzip"}});
    CHECK(unrouted.status == 404);
    CHECK_FALSE(unrouted.has_header("vary"));
  }
  check_clean_exit(gw);
}

TEST_CASE("compression: the threshold and the switch", "[compression]") {
  mock_downstream mock({"--delay", "1ms"});
  SECTION("an answer below min_bytes (1 KiB by default) is sent as it is") {
    gateway_process gw(seed_config{mock.url()}.yaml());
    const auto res = http_get(gw.port(), offer_target("T1"), {{"Accept-Encoding", "gzip"}});
    check_offer(res, "T1");
    CHECK(res.body.size() < 1024);
    CHECK_FALSE(res.has_header("content-encoding"));
    CHECK(res.header("vary") == "Accept-Encoding");
  }
  SECTION("a large answer is compressed at the default threshold") {
    // Each entry carries a 4 KiB field of the mock's answer for coupon.
    mock.set_body("coupon",
                  R"({"sku":"T2","priceCent":1,"stock":2,"pad":")" + std::string(4096, 'p') + "\"}");
    gateway_process gw(seed_config{mock.url()}.yaml());
    const auto res = http_get(gw.port(), offer_target("T2"), {{"Accept-Encoding", "gzip"}});
    REQUIRE(res.status == 200);
    CHECK(res.header("content-encoding") == "gzip");
    CHECK(res.body.size() < 1024);
    const auto body = nlohmann::json::parse(inflated(res.body, 31));
    CHECK(body.at(2).at("pad").get<std::string>().size() == 4096);
  }
  SECTION("an answer above max_bytes is sent as it is") {
    gateway_process gw(compressing_config(mock, "{min_bytes: 64, max_bytes: 128}"));
    const auto res = http_get(gw.port(), offer_target("T4"), {{"Accept-Encoding", "gzip"}});
    check_offer(res, "T4");
    CHECK(res.body.size() > 128);
    CHECK_FALSE(res.has_header("content-encoding"));
    CHECK(res.header("vary") == "Accept-Encoding");
  }
  SECTION("enabled: false: never compressed, no Vary") {
    gateway_process gw(compressing_config(mock, "{enabled: false, min_bytes: 0}"));
    const auto res = http_get(gw.port(), offer_target("T3"), {{"Accept-Encoding", "gzip"}});
    check_offer(res, "T3");
    CHECK_FALSE(res.has_header("content-encoding"));
    CHECK_FALSE(res.has_header("vary"));
  }
}

TEST_CASE("compression: a compressed downstream's answers are inflated and merged", "[compression]") {
  std::vector<std::string> args{"--delay", "1ms"};
  for (const auto& call : seed_calls) args.insert(args.end(), {"--path", call + "=compressed"});
  mock_downstream mock(args);
  SECTION("compressed: true asks for gzip and deflate; the answers come gzipped") {
    gateway_process gw(compressing_config(mock, "{enabled: false}", "    compressed: true\n"));
    check_offer(http_get(gw.port(), offer_target("D1")), "D1");
    const auto stats = mock.stats();
    CHECK(stats["paths"]["coupon"]["last_accept_encoding"] == "gzip, deflate");
    check_clean_exit(gw);
  }
  SECTION("off by default: nothing asked, plain answers") {
    gateway_process gw(seed_config{mock.url()}.yaml());
    check_offer(http_get(gw.port(), offer_target("D2")), "D2");
    CHECK(mock.stats()["paths"]["coupon"]["last_accept_encoding"] == "");
  }
}

TEST_CASE("compression: a zip bomb, a corrupt body and an unknown coding fall back", "[compression]") {
  mock_downstream mock({"--delay", "1ms", "--path", "coupon=zipbomb", "--path", "review-summary=badgzip",
                        "--path", "logistics-eta=brotli", "--path", "channel-price=compressed"});
  seed_config cfg{mock.url()};
  cfg.downstream_extra = "    compressed: true\n";
  SECTION("each degrades its own entry; the others are merged") {
    gateway_process gw(cfg.yaml());
    for (int i = 0; i < 3; ++i) {
      const auto res = http_get(gw.port(), offer_target("B1"));
      check_offer(res, "B1", {"coupon", "review-summary", "logistics-eta"});
      CHECK(res.degraded_reason("coupon") == "error");
    }
    CHECK(gw.running());
    check_clean_exit(gw);
  }
  SECTION("the detail names the reason (a required call's error answer shows it)") {
    struct row {
      const char* call;
      const char* detail;
    };
    for (const auto& r : {row{"coupon", "decoded body too large"}, row{"review-summary", "corrupt gzip body"},
                          row{"logistics-eta", "unknown content coding"}}) {
      INFO(r.call);
      cfg.required_calls = {r.call};
      gateway_process gw(cfg.yaml());
      const auto res = http_get(gw.port(), offer_target("B2"));
      check_error(res, 502);
      CHECK_THAT(res.json()["error"].get<std::string>(), Catch::Contains(r.detail));
    }
  }
}
