// Compressed downstream answers and compressed client answers, short of the network: the settings, the
// Accept-Encoding a `compressed` downstream is asked with, the response parser recording Content-Encoding,
// decoding a body within the limit, and the response head's Content-Encoding and Vary.

#include "gateway/codec/compression.hpp"
#include "gateway/config/config_json.hpp"
#include "gateway/config/config_loader.hpp"
#include "gateway/downstream/http_result.hpp"
#include "gateway/downstream/request_head.hpp"
#include "gateway/downstream/response_parser.hpp"
#include "gateway/server/response_head.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace gateway;

namespace {

std::string config_text(const std::string& server_extra, const std::string& downstream_extra) {
  return "server:\n  listen: 127.0.0.1:0\n" + server_extra +
         "downstreams:\n  coupon:\n    url: http://127.0.0.1:9001\n" + downstream_extra +
         "routes:\n  - path: /a\n    calls:\n      - {name: coupon, downstream: coupon, path: /coupon}\n";
}

std::string head_for(const downstream_settings& d) {
  request_head head(d);
  call_request req;
  req.target = "/coupon?sku=A1";
  req.now = clock::now();
  req.deadline = req.now + milliseconds(100);
  req.request_id = "r1";
  std::string out(head.size(req), '\0');
  head.write(req, out.data());
  return out;
}

// Parses a whole answer; REQUIREs that it is complete.
response_parser& parsed(response_parser& p, const std::string& wire) {
  boost::system::error_code ec;
  p.put(wire, ec);
  REQUIRE_FALSE(ec);
  REQUIRE(p.is_done());
  return p;
}

std::string gzipped(std::string_view text) {
  std::string out;
  REQUIRE(compress(text, content_coding::gzip, 6, out));
  return out;
}

}  // namespace

TEST_CASE("compression settings: defaults, values, validation and /config", "[compression]") {
  auto r = load_config_text(config_text("", ""), "t.yaml");
  REQUIRE(r.config.has_value());
  CHECK(r.config->server.compression.enabled);
  CHECK(r.config->server.compression.min_bytes == 1024);
  CHECK(r.config->server.compression.max_bytes == 1024 * 1024);
  CHECK(r.config->server.compression.level == 1);
  CHECK_FALSE(r.config->downstreams[0].compressed);
  auto json = effective_config_json(*r.config);
  CHECK(json["server"]["compression"] ==
        nlohmann::json{{"enabled", true}, {"min_bytes", 1024}, {"max_bytes", 1024 * 1024}, {"level", 1}});
  CHECK(json["downstreams"]["coupon"]["compressed"] == false);

  r = load_config_text(
      config_text("  compression: {enabled: false, min_bytes: 2KiB, max_bytes: 2KiB, level: 9}\n",
                  "    compressed: true\n"),
      "t.yaml");
  REQUIRE(r.config.has_value());
  CHECK_FALSE(r.config->server.compression.enabled);
  CHECK(r.config->server.compression.min_bytes == 2048);
  CHECK(r.config->server.compression.max_bytes == 2048);
  CHECK(r.config->server.compression.level == 9);
  CHECK(r.config->downstreams[0].compressed);
  json = effective_config_json(*r.config);
  CHECK(json["server"]["compression"]["level"] == 9);
  CHECK(json["downstreams"]["coupon"]["compressed"] == true);

  struct bad {
    const char* server;
    const char* downstream;
    const char* message;
  };
  const bad cases[] = {
      {"  compression: {level: 0}\n", "", "level"},
      {"  compression: {level: 10}\n", "", "level"},
      {"  compression: {min_bytes: -1}\n", "", "min_bytes"},
      {"  compression: {min_bytes: 2KiB, max_bytes: 1KiB}\n", "", "max_bytes must not be below min_bytes"},
      {"  compression: {min_bytes: 2MiB}\n", "", "max_bytes must not be below min_bytes"},
      {"  compression: {enabled: maybe}\n", "", "enabled"},
      {"  compression: {types: [json]}\n", "", "types"},
      {"  compression: true\n", "", "compression"},
      {"", "    compressed: gzip\n", "compressed"},
  };
  for (const auto& c : cases) {
    INFO(c.server << c.downstream);
    const auto bad_load = load_config_text(config_text(c.server, c.downstream), "t.yaml");
    CHECK_FALSE(bad_load.config.has_value());
    REQUIRE(bad_load.errors.size() == 1);
    CHECK_THAT(bad_load.errors[0].message, Catch::Contains(c.message));
  }
  // A SQL downstream has no HTTP answers to compress.
  const auto sql = load_config_text(
      "downstreams:\n  inv:\n    kind: sql\n    driver: sqlite\n    database: x.db\n    compressed: true\n"
      "    query: SELECT 1\nroutes:\n  - path: /a\n    calls:\n      - {name: inv, downstream: inv}\n",
      "t.yaml");
  CHECK_FALSE(sql.config.has_value());
}

TEST_CASE("compression: a compressed downstream is asked for gzip and deflate", "[compression]") {
  auto r = load_config_text(config_text("", "    compressed: true\n"), "t.yaml");
  REQUIRE(r.config.has_value());
  auto d = r.config->downstreams[0];
  const auto asked = head_for(d);
  CHECK_THAT(asked, Catch::Contains("\r\nAccept: application/json\r\nAccept-Encoding: gzip, deflate\r\n"));
  CHECK_THAT(asked, Catch::EndsWith("\r\n\r\n"));
  d.compressed = false;
  CHECK_THAT(head_for(d), !Catch::Contains("Accept-Encoding"));
}

TEST_CASE("compression: the response parser records Content-Encoding", "[compression]") {
  const std::string body = gzipped(R"({"a":1})");
  const auto answer = [&](const std::string& fields) {
    return "HTTP/1.1 200 OK\r\n" + fields + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
           body;
  };
  using enum content_coding;
  struct row {
    const char* fields;
    content_coding coding;
  };
  const row rows[] = {
      {"", identity},
      {"Content-Encoding: gzip\r\n", gzip},
      {"content-encoding: X-GZIP\r\n", gzip},
      {"Content-Encoding: deflate\r\n", deflate},
      {"Content-Encoding: identity\r\n", identity},
      {"Content-Encoding: br\r\n", unknown},
      {"Content-Encoding: gzip, br\r\n", unknown},
      {"Content-Encoding: gzip\r\nContent-Encoding: gzip\r\n", unknown},  // layered in two fields
  };
  for (const auto& r : rows) {
    INFO(r.fields);
    response_parser p(1024, 4096);
    CHECK(parsed(p, answer(r.fields)).coding() == r.coding);
    CHECK(p.body() == body);  // kept as received
  }
  // An interim response's fields are not the answer's.
  response_parser p(1024, 4096);
  CHECK(parsed(p, "HTTP/1.1 103 Early Hints\r\nContent-Encoding: gzip\r\n\r\n" + answer("")).coding() ==
        identity);
}

TEST_CASE("compression: a decoded answer is judged as a plain one, a bad one fails the call",
          "[compression]") {
  const std::string json = R"({"priceCent":100,"pad":")" + std::string(5000, 'x') + "\"}";
  std::string body = gzipped(json);
  CHECK(decode_body(content_coding::gzip, body, json.size()) == nullptr);
  CHECK(body == json);
  CHECK(answer_result(200, std::move(body)).ok());

  body = gzipped(json);
  CHECK(std::string_view(decode_body(content_coding::gzip, body, json.size() - 1)) ==
        "decoded body too large");
  body = "not gzip";
  CHECK(std::string_view(decode_body(content_coding::gzip, body, 1024)) == "corrupt gzip body");
  CHECK(std::string_view(decode_body(content_coding::deflate, body, 1024)) == "corrupt deflate body");
  CHECK(std::string_view(decode_body(content_coding::unknown, body, 1024)) == "unknown content coding");

  const auto failed = unusable_answer(200, "corrupt gzip body", call_error::invalid_body);
  CHECK(failed.outcome == call_outcome::error);
  CHECK(outcome_label(failed.label_index()) == "invalid_body");
  CHECK(failed.status == 200);
  CHECK(std::string_view(failed.detail) == "corrupt gzip body");
}

TEST_CASE("compression: the response head's Content-Encoding and Vary", "[compression]") {
  const auto head = serialize({.status = 200,
                               .content_type = "application/json",
                               .content_encoding = "gzip",
                               .content_length = 42,
                               .vary_accept_encoding = true});
  CHECK_THAT(head, Catch::Contains("\r\nContent-Encoding: gzip\r\n"));
  CHECK_THAT(head, Catch::Contains("\r\nContent-Length: 42\r\n"));
  CHECK_THAT(head, Catch::Contains("\r\nVary: Accept-Encoding\r\n"));
  const auto plain = serialize({.status = 200, .content_type = "application/json", .content_length = 2});
  CHECK_THAT(plain, !Catch::Contains("Content-Encoding"));
  CHECK_THAT(plain, !Catch::Contains("Vary"));
}
