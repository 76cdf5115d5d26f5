// What the access log and spans show of a request: targets with secret query values redacted.

#include "gateway/observe/redaction.hpp"

#include <catch2/catch.hpp>

using namespace gateway;

namespace {

std::string redacted(std::string_view target, std::size_t max = 2048) {
  std::string out;
  append_redacted_target(out, target, max);
  return out;
}

}  // namespace

TEST_CASE("redaction: secret query values are replaced and everything else kept as it came", "[redaction]") {
  CHECK(redacted("/api/offer/aggregate") == "/api/offer/aggregate");
  CHECK(redacted("/api/offer/aggregate?sku=A1") == "/api/offer/aggregate?sku=A1");
  CHECK(redacted("/a?sku=A1&api_key=s3cr3t&x=1") == "/a?sku=A1&api_key=REDACTED&x=1");
  CHECK(redacted("/a?access_token=abc") == "/a?access_token=REDACTED");
  CHECK(redacted("/a?Signature=abc&X-Goog-Signature=def&sig=1&code=2") ==
        "/a?Signature=REDACTED&X-Goog-Signature=REDACTED&sig=REDACTED&code=REDACTED");
  CHECK(redacted("/a?AWSAccessKeyId=AKIA&password=p&session_id=9") ==
        "/a?AWSAccessKeyId=REDACTED&password=REDACTED&session_id=REDACTED");
  // A percent-encoded name is judged decoded; a name with no value has nothing to hide.
  CHECK(redacted("/a?%74oken=abc&token") == "/a?%74oken=REDACTED&token");
  CHECK(redacted("/a?&&sku=1&") == "/a?&&sku=1&");
  CHECK(redacted("/a?") == "/a?");
  CHECK(redacted("/a?postal_code=1&zip=2") == "/a?postal_code=1&zip=2");
}

TEST_CASE("redaction: a long target is cut and marked", "[redaction]") {
  const std::string path = "/" + std::string(100, 'p');
  CHECK(redacted(path, 20) == path.substr(0, 20) + "...");
  CHECK(redacted("/a?token=" + std::string(100, 's'), 20) == "/a?token=REDACTED");
  const auto cut = redacted("/a?x=" + std::string(100, 'v') + "&token=secret", 30);
  CHECK(cut.size() == 33);
  CHECK(cut.find("secret") == std::string::npos);
}
