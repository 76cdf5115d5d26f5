// The mock's command line: listeners, seeds, latency distributions, bodies and the profile.

#include "loadtest/mock/options.hpp"

#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace mock;
using namespace std::chrono_literals;

namespace {

std::optional<mock_options> parse(std::vector<std::string_view> args, std::string& error) {
  return parse_command_line(args, error);
}

mock_options parsed(std::vector<std::string_view> args) {
  std::string error;
  auto options = parse(args, error);
  INFO(error);
  REQUIRE(options.has_value());
  return *options;
}

// A file in the temporary directory, removed at the end of the test.
struct temp_file {
  explicit temp_file(const std::string& content) {
    static int count = 0;
    const auto name = "mock-options-test-" + std::to_string(::getpid()) + "-" + std::to_string(++count);
    path = (std::filesystem::temp_directory_path() / name).string();
    std::ofstream(path, std::ios::binary) << content;
  }
  ~temp_file() { std::remove(path.c_str()); }
  std::string path;
};

}  // namespace

TEST_CASE("mock options: defaults", "[mock]") {
  const auto o = parsed({});
  CHECK(o.listen == std::vector<listen_address>{{"127.0.0.1", 9001}});
  CHECK(o.seed == 1);
  CHECK(o.default_delay == latency{});
  CHECK(o.bodies.empty());
}

TEST_CASE("mock options: --listen may be repeated, one endpoint each, in order", "[mock]") {
  const auto o = parsed({"--listen", "127.0.0.1:0", "--listen=localhost:9002", "--listen", "[::1]:7"});
  CHECK(o.listen == std::vector<listen_address>{{"127.0.0.1", 0}, {"127.0.0.1", 9002}, {"::1", 7}});

  std::string error;
  CHECK_FALSE(parse({"--listen", "127.0.0.1"}, error));
  CHECK(error.find("--listen") != std::string::npos);
  std::vector<std::string_view> many;
  for (std::size_t i = 0; i <= mock_options::max_listeners; ++i) {
    many.push_back("--listen");
    many.push_back("127.0.0.1:0");
  }
  CHECK_FALSE(parse(many, error));
  CHECK(error.find("at most") != std::string::npos);
}

TEST_CASE("mock options: --backlog", "[mock]") {
  CHECK(parsed({}).backlog == 0);  // the system's maximum
  CHECK(parsed({"--backlog", "511"}).backlog == 511);
  std::string error;
  for (std::string_view bad : {"0", "-1", "x", "65536"}) {
    INFO(bad);
    CHECK_FALSE(parse({"--backlog", bad}, error));
  }
}

TEST_CASE("mock options: --seed", "[mock]") {
  CHECK(parsed({"--seed", "42"}).seed == 42);
  CHECK(parsed({"--seed=18446744073709551615"}).seed == 18446744073709551615ull);
  std::string error;
  for (std::string_view bad : {"-1", "x", "", "18446744073709551616"}) {
    INFO(bad);
    CHECK_FALSE(parse({"--seed", bad}, error));
  }
}

TEST_CASE("mock options: delays may have a tail", "[mock]") {
  const auto o =
      parsed({"--delay", "20ms,p90=80ms", "--path", "coupon=ok:150ms,p98=700ms", "--path", "inventory=hang"});
  CHECK(o.default_delay.base == microseconds(20ms));
  REQUIRE(o.default_delay.tail_size == 1);
  CHECK(o.default_delay.tail[0].from == 900'000);
  REQUIRE(o.paths.size() == 2);
  CHECK(o.paths[0].name == "coupon");
  CHECK(o.paths[0].how == mode::ok);
  REQUIRE(o.paths[0].delay.has_value());
  CHECK(o.paths[0].delay->pick(980'000) == microseconds(700ms));
  CHECK(o.paths[1].how == mode::hang);
  CHECK_FALSE(o.paths[1].delay.has_value());
}

TEST_CASE("mock options: a bad latency says why", "[mock]") {
  std::string error;
  CHECK_FALSE(parse({"--path", "coupon=ok:150ms,p98=70"}, error));
  CHECK(error.find("bad value for --path: 'coupon=ok:150ms,p98=70'") != std::string::npos);
  CHECK(error.find("bad duration '70'") != std::string::npos);
  CHECK_FALSE(parse({"--delay", "5ms,p50=1ms"}, error));
  CHECK(error.find("shorter") != std::string::npos);
  CHECK_FALSE(parse({"--path", "coupon=slow:5ms"}, error));
  CHECK(error.find("unknown mode 'slow'") != std::string::npos);
}

TEST_CASE("mock options: path settings", "[mock]") {
  std::string error;
  const auto s = parse_path_setting("inventory=ok:120ms", error);
  REQUIRE(s.has_value());
  CHECK(s->name == "inventory");
  CHECK(s->delay == latency{microseconds(120ms)});
  for (std::string_view bad : {"inventory", "=ok", "in*ventory=ok", "inventory=ok:", "inventory=ok:1h"}) {
    INFO(bad);
    CHECK_FALSE(parse_path_setting(bad, error).has_value());
    CHECK_FALSE(error.empty());
  }
}

TEST_CASE("mock options: --body reads a JSON file", "[mock]") {
  temp_file good(R"({"price": 5, "items": [1, 2]})");
  const std::string arg = "coupon=@" + good.path;
  const auto o = parsed({"--body", arg});
  REQUIRE(o.bodies.size() == 1);
  CHECK(o.bodies[0].name == "coupon");
  CHECK(o.bodies[0].json == R"({"price": 5, "items": [1, 2]})");

  std::string error;
  temp_file bad("{not json");
  CHECK_FALSE(parse({"--body", "coupon=@" + bad.path}, error));
  CHECK(error.find("is not JSON") != std::string::npos);
  CHECK_FALSE(parse({"--body", "coupon=@/nonexistent/body.json"}, error));
  CHECK(error.find("cannot read") != std::string::npos);
  CHECK_FALSE(parse({"--body", "coupon={}"}, error));
  CHECK(error.find("NAME=@FILE") != std::string::npos);
}

TEST_CASE("mock options: the profile takes latencies too", "[mock]") {
  mock_options o;
  std::string error;
  REQUIRE(apply_profile(
      "default_delay: 10ms,p99=50ms\npaths:\n  coupon: {mode: fail, delay: '1ms,p50=2ms'}\n", o, error));
  CHECK(o.default_delay.tail_size == 1);
  REQUIRE(o.paths.size() == 1);
  CHECK(o.paths[0].how == mode::fail);
  CHECK(o.paths[0].delay->tail[0].from == 500'000);
  CHECK_FALSE(apply_profile("paths: {coupon: {delay: '1ms,p50'}}", o, error));
  CHECK(error.find("paths.coupon.delay") != std::string::npos);
}

TEST_CASE("mock options: a setting may name a prefix PATH/*", "[mock]") {
  temp_file body(R"({"id": 1})");
  const auto o = parsed({"--path", "seller/*=fail:5ms", "--body", "seller/vip/*=@" + body.path});
  REQUIRE(o.paths.size() == 1);
  CHECK(o.paths[0].name == "seller/*");
  REQUIRE(o.bodies.size() == 1);
  CHECK(o.bodies[0].name == "seller/vip/*");

  std::string error;
  for (std::string_view bad : {"seller*=ok", "*=ok", "seller/**=ok", "seller/*/x=ok", "/*x=ok"}) {
    INFO(bad);
    CHECK_FALSE(parse_path_setting(bad, error).has_value());
  }
  CHECK(setting_prefix("seller/*") == "seller/");
  CHECK(setting_prefix("seller/17").empty());

  mock_options p;
  REQUIRE(apply_profile("paths:\n  seller/*: {mode: hang}\n  'author/*': {delay: 2ms}\n", p, error));
  REQUIRE(p.paths.size() == 2);
  CHECK(p.paths[0].name == "seller/*");
  CHECK(p.paths[1].name == "author/*");
  CHECK_FALSE(apply_profile("paths: {'seller*': {mode: hang}}", p, error));
}
