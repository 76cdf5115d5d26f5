#include "gateway/codec/credentials.hpp"

#include <catch2/catch.hpp>

using gateway::bearer_token;
using gateway::cookie_value;

TEST_CASE("bearer_token takes RFC 6750's b64token after the scheme and nothing else", "[credentials]") {
  CHECK(bearer_token("Bearer abc.def-ghi_jkl") == "abc.def-ghi_jkl");
  CHECK(bearer_token("bearer   a+/b==") == "a+/b==");
  CHECK(bearer_token("BEARER x") == "x");
  CHECK(bearer_token("Bearer").empty());
  CHECK(bearer_token("Bearer ").empty());
  CHECK(bearer_token("Bearer\tabc").empty());
  CHECK(bearer_token("Bearerabc").empty());
  CHECK(bearer_token("Basic dXNlcjpwYXNz").empty());
  CHECK(bearer_token("Bearer abc def").empty());      // two tokens
  CHECK(bearer_token("Bearer a, Bearer b").empty());  // two Authorization fields joined
  CHECK(bearer_token("Bearer =abc").empty());
  CHECK(bearer_token("Bearer ab=c").empty());
  CHECK(bearer_token("Bearer abc ").empty());
}

TEST_CASE("cookie_value finds the first cookie of a name, unquoted, in one or several Cookie fields",
          "[credentials]") {
  CHECK(cookie_value("session=abc", "session") == "abc");
  CHECK(cookie_value("a=1; session=abc; b=2", "session") == "abc");
  CHECK(cookie_value("a=1;session=abc", "session") == "abc");
  CHECK(cookie_value("session=\"q v\"; x=y", "session") == "q v");
  CHECK(cookie_value("session=first; session=second", "session") == "first");
  CHECK(cookie_value("xsession=abc; session_x=1", "session").empty());
  CHECK(cookie_value("session; a=1", "session").empty());
  CHECK(cookie_value("session=", "session").empty());
  CHECK(cookie_value("a=1", "").empty());
  CHECK(cookie_value("", "session").empty());
  CHECK(cookie_value("  session = spaced  ; a=1", "session") == "spaced");
}
