// The request-target rule (core/request_target.hpp): what is made canonical, what is refused, and the
// property a pass-through route relies on: whatever the client sends, the downstream's target starts with
// the route's base and rewrite and holds no dot segment in any encoding.

#include "gateway/codec/request_target.hpp"
#include "gateway/config/config_loader.hpp"
#include "gateway/server/router.hpp"

#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>
#include <catch2/catch.hpp>

#include <random>
#include <string>

using namespace gateway;

namespace {

// The canonical target, or "!" when refused.
std::string canonical(std::string_view target) {
  const auto r = normalize_target(target);
  if (!r.ok) return "!";
  return r.rewritten ? r.target : std::string(target);
}

// Every segment of `target`'s path is free of dot segments in any encoding, and no '\' or encoded '/'.
void check_clean_path(const std::string& target) {
  const auto path = target_path(target);
  INFO(target);
  REQUIRE(!path.empty());
  REQUIRE(path.front() == '/');
  CHECK(path.find('\\') == std::string_view::npos);
  std::string lower(path);
  for (auto& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c | 0x20 : c);
  CHECK(lower.find("%2f") == std::string::npos);
  CHECK(lower.find("%5c") == std::string::npos);
  CHECK(lower.find("%2e") == std::string::npos);  // '.' is unreserved: always decoded
  std::string_view rest = path.substr(1);
  for (;;) {
    const auto slash = rest.find('/');
    CHECK_FALSE(dot_segment_in_any_encoding(rest.substr(0, slash)));
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
}

// Generates request-targets from the pieces a hostile client combines: each is `prefix` and 1 to
// `max_pieces` pieces. Seeded, so a failure repeats.
class target_generator {
 public:
  template <std::size_t N>
  target_generator(const char* const (&pieces)[N], unsigned seed, int max_pieces)
      : pieces_(pieces), rng_(seed), pick_(0, N - 1), length_(1, max_pieces) {}
  std::string next(std::string prefix) {
    for (int n = length_(rng_); n > 0; --n) prefix += pieces_[pick_(rng_)];
    return prefix;
  }

 private:
  const char* const* pieces_;
  std::mt19937 rng_;
  std::uniform_int_distribution<std::size_t> pick_;
  std::uniform_int_distribution<int> length_;
};

}  // namespace

TEST_CASE("request targets: canonical ones are left as they are, without a copy") {
  for (const char* t : {"/", "/api/offer/aggregate?sku=A1", "/files/a.txt", "/a/b/c/", "/a//b", "*",
                        "/q?x=../..&y=%2e%2e", "/a.b/.c.d"}) {
    INFO(t);
    const auto r = normalize_target(t);
    CHECK(r.ok);
    CHECK_FALSE(r.rewritten);
    CHECK(r.target.empty());
  }
}

TEST_CASE("request targets: unreserved escapes decoded, dot segments removed") {
  CHECK(canonical("/files/a/../../../etc/passwd") == "/etc/passwd");
  CHECK(canonical("/files/%2e%2e/%2e%2e/internal/admin") == "/internal/admin");
  CHECK(canonical("/files/%2E%2E/x") == "/x");
  CHECK(canonical("/files/.%2e/x") == "/x");
  CHECK(canonical("/files/./a/./b") == "/files/a/b");
  CHECK(canonical("/a/b/..") == "/a/");
  CHECK(canonical("/a/b/.") == "/a/b/");
  CHECK(canonical("/..") == "/");
  CHECK(canonical("/api/%6Fffer?sku=%41") == "/api/offer?sku=%41");  // the query as sent
  CHECK(canonical("/a%3fb") == "/a%3Fb");                            // reserved: kept, uppercase hex
  CHECK(canonical("/caf\xc3\xa9") == "/caf%C3%A9");
  CHECK(canonical("/a/..?x=1") == "/?x=1");
}

TEST_CASE("request targets: the absolute form becomes a path, its authority the Host") {
  auto r = normalize_target("http://evil.example/files/../x?q=1");
  REQUIRE(r.ok);
  CHECK(r.rewritten);
  CHECK(r.target == "/x?q=1");
  CHECK(r.authority == "evil.example");
  r = normalize_target("HTTPS://a.example:8443");
  REQUIRE(r.ok);
  CHECK(r.target == "/");
  CHECK(r.authority == "a.example:8443");
  r = normalize_target("http://a.example?x");
  REQUIRE(r.ok);
  CHECK(r.target == "/?x");
}

TEST_CASE("request targets: what no server should have to guess is refused") {
  for (const char* t : {"/files/a#frag",
                        "/a?b#c",
                        "/files/..\\..\\x",
                        "/files/a%5cb",
                        "/files/a%5Cb",
                        "/files/%2fetc",
                        "/a%2F..%2Fb",
                        "/a%00b",
                        "/a%zz",
                        "/a%4",
                        "/files/..;/x",
                        "/files/.;x/y",
                        "/files/%2e%2e;a/b",
                        "/files/%252e%252e/x",
                        "/files/%25252E./x",
                        "ftp://a/b",
                        "http:///x",
                        "http://user:pw@a/x",
                        "example.com:443",
                        "a/b",
                        "http://a\\b/x",
                        "//internal/admin",
                        "/%2e//internal",
                        "/..//internal",
                        "http://a//internal"}) {
    INFO(t);
    CHECK(canonical(t) == "!");
  }
}

TEST_CASE("request targets: the rule is idempotent and leaves no dot segment, for any generated path") {
  // Pieces a hostile client combines; the generator is seeded, so a failure repeats.
  static const char* pieces[] = {"/",   "/",  "/",   ".",   "..",    "%2e",  "%2E",    "%2e%2e", "%252e",
                                 "%25", ";",  "..;", "a",   "files", "blob", "etc",    "%2f",    "%2F",
                                 "%5c", "\\", "%41", "%7e", "~",     "-",    "%c3%a9", "\xc3",   "?",
                                 "#",   "%",  "%0",  "%00", "//",    "x.y"};
  target_generator generate(pieces, 20261206, 12);
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string target = generate.next("/");
    const auto r = normalize_target(target);
    if (!r.ok) continue;
    ++accepted;
    const std::string once = r.rewritten ? r.target : target;
    check_clean_path(once);
    const auto again = normalize_target(once);
    INFO(target);
    REQUIRE(again.ok);
    CHECK_FALSE(again.rewritten);
  }
  CHECK(accepted > 2000);  // the generator reaches accepted paths, not only refusals
}

TEST_CASE("pass-through targets: whatever the client sends stays under the route's rewrite and base") {
  auto loaded = load_config_file(SOURCE_DIR "/tests/fuzz/request_target_routes.yaml");
  REQUIRE(loaded.errors.empty());
  const auto& config = *loaded.config;
  const router routes(config.routes);
  static const char* pieces[] = {"/",     "/",   ".", "..",    "%2e",  "%2E",    "%2e%2e",
                                 "%252e", ";",   "a", "files", "item", "info",   "%2f",
                                 "\\",    "%41", "x", "//",    "?",    "?q=../", "#"};
  target_generator generate(pieces, 7, 10);
  int matched = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string sent = generate.next(i % 2 == 0 ? "/files/" : "/item/");
    const auto r = normalize_target(sent);
    if (!r.ok) continue;
    const std::string target = r.rewritten ? r.target : sent;
    const auto found = routes.find("GET", target);
    if (found.status != 200) continue;
    ++matched;
    const auto& route = config.routes[found.index];
    const auto& proxy = std::get<proxy_route>(route.kind);
    const auto out =
        forwarded_target(route.pattern, proxy, config.downstreams[proxy.downstream_index], target);
    INFO(sent << " -> " << out);
    CHECK(out.rfind(found.index == 0 ? "/base/blob/" : found.index == 1 ? "/base/item/" : "/base/r", 0) == 0);
    check_clean_path(out);
  }
  CHECK(matched > 1000);
}

TEST_CASE("request targets: the canonical path is Boost.URL's normalized path, for any generated path") {
  // An independent implementation of RFC 3986 6.2.2 and 5.2.4: Boost.URL's url::normalize_path(). Where
  // it differs by design: it keeps ".." segments that would climb above the root (RFC 3986 removes them,
  // as this rule does), and it writes a path that would start with "//" as "/.//" (this rule refuses it).
  static const char* pieces[] = {"/",     "/",      "/",  ".",   "..",    "%2e", "%2E", "%2e%2e",
                                 "%252e", "%25",    ";",  "a",   "files", "%41", "%7e", "~",
                                 "-",     "%c3%a9", "//", "x.y", "%3f",   "%3F", "%20"};
  target_generator generate(pieces, 31, 12);
  int compared = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string target = generate.next("/");
    const auto ours = normalize_target(target);
    const auto parsed = boost::urls::parse_origin_form(target);
    REQUIRE(parsed);  // every piece is valid origin-form text
    if (!ours.ok) continue;
    boost::urls::url theirs(*parsed);
    theirs.normalize_path();
    std::string path(theirs.encoded_path());
    while (path.rfind("/..", 0) == 0 && (path.size() == 3 || path[3] == '/')) path.erase(0, 3);
    if (path.rfind("/./", 0) == 0) path.erase(0, 2);  // its guard against a leading "//"
    if (path.empty()) path = "/";
    INFO(target);
    CHECK((ours.rewritten ? ours.target : target) == path);
    ++compared;
  }
  CHECK(compared > 10000);
}
