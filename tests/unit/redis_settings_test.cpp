// parse_redis_url: the forms of a Redis URL the rate limiter accepts, and what it refuses.

#include "gateway/limit/redis_settings.hpp"

#include <catch2/catch.hpp>

using namespace gateway;

namespace {

redis_settings parsed(std::string_view url) {
  std::string error;
  auto s = parse_redis_url(url, error);
  INFO(url << ": " << error);
  REQUIRE(s);
  CHECK(error.empty());
  return *s;
}

std::string refusal(std::string_view url) {
  std::string error;
  auto s = parse_redis_url(url, error);
  INFO(url);
  CHECK_FALSE(s);
  CHECK_FALSE(error.empty());
  return error;
}

}  // namespace

TEST_CASE("redis url: host alone takes the defaults") {
  const auto s = parsed("redis://cache.internal");
  CHECK(s.host == "cache.internal");
  CHECK(s.port == 6379);
  CHECK_FALSE(s.tls);
  CHECK(s.username.empty());
  CHECK(s.password.empty());
  CHECK(s.database == 0);
  CHECK(s.timeout == std::chrono::milliseconds(50));
  CHECK(s.connect_timeout == std::chrono::milliseconds(1000));
  CHECK(s.connections_per_thread == 1);
  CHECK(s.verify);
}

TEST_CASE("redis url: every part") {
  const auto s = parsed("rediss://lim%40iter:p%3Ass%2Fw%25rd@10.0.0.7:6380/15");
  CHECK(s.tls);
  CHECK(s.host == "10.0.0.7");
  CHECK(s.port == 6380);
  CHECK(s.username == "lim@iter");
  CHECK(s.password == "p:ss/w%rd");
  CHECK(s.database == 15);
}

TEST_CASE("redis url: password only, scheme in capitals, a trailing slash, IPv6, the largest database") {
  auto s = parsed("REDIS://:secret@localhost:1/");
  CHECK(s.username.empty());
  CHECK(s.password == "secret");
  CHECK(s.port == 1);
  CHECK(s.database == 0);
  s = parsed("redis://[::1]:65535/2147483647");
  CHECK(s.host == "::1");
  CHECK(s.port == 65535);
  CHECK(s.database == 2147483647);
  CHECK(parsed("Rediss://h").tls);
}

TEST_CASE("redis url: refusals") {
  CHECK(refusal("http://host").find("scheme") != std::string::npos);
  CHECK(refusal("unix:///run/redis.sock").find("scheme") != std::string::npos);
  CHECK(refusal("redis://").find("host") != std::string::npos);
  CHECK(refusal("redis:///0").find("host") != std::string::npos);
  CHECK(refusal("redis://:pw@:6379").find("host") != std::string::npos);
  for (const char* url :
       {"redis://h:0", "redis://h:65536", "redis://h:", "redis://h:+1", "redis://h:99999999999"})
    CHECK(refusal(url).find("port") != std::string::npos);
  for (const char* url : {"redis://h/x", "redis://h/-1", "redis://h/2147483648", "redis://h/1/2",
                          "redis://h/1x", "redis://h/%31", "redis://h/+1"})
    CHECK(refusal(url).find("database") != std::string::npos);
  CHECK(refusal("redis://user@h").find("password") != std::string::npos);
  CHECK(refusal("redis://h?db=1").find("query") != std::string::npos);
  CHECK(refusal("redis://h#x").find("fragment") != std::string::npos);
  refusal("redis://h h");
  refusal("not a url");
  refusal("");
}
