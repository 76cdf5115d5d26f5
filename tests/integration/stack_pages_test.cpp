// A connection's coroutine stack is 64 KiB of address space, but only the pages a request touches are
// memory. A request of the seed route that goes well touches two of them (8 KiB), so a connection waiting
// for its calls, or idle, holds 8 KiB of stack (loadtest `d`, memory per in-flight aggregation): the
// frames on the way were kept small for it (session.cpp, serve_one). Read from the real gateway's
// /proc/PID/smaps, where a coroutine stack is a 64 KiB mapping right above its 4 KiB guard page.
// Deterministic: which pages a path touches does not depend on timing.

#include "tests/support/http_client.hpp"
#include "tests/support/offer_checks.hpp"
#include "tests/support/processes.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace test_support;

namespace {

struct coroutine_stack {
  std::uint64_t size_kb = 0;
  std::uint64_t resident_kb = 0;
};

// The process's mappings that follow a 4 KiB guard page (---p) directly: coroutine stacks.
std::vector<coroutine_stack> coroutine_stacks(int pid) {
  std::ifstream smaps("/proc/" + std::to_string(pid) + "/smaps");
  std::vector<coroutine_stack> out;
  std::string line;
  std::uint64_t guard_end = 0;  // where the last guard page ended
  bool in_stack = false;
  while (std::getline(smaps, line)) {
    std::uint64_t start = 0, end = 0;
    char dash = 0;
    std::string perms;
    std::istringstream fields(line);
    fields >> std::hex >> start >> dash >> end >> perms;
    if (fields && dash == '-') {  // a mapping's first line
      in_stack = perms == "rw-p" && guard_end == start && start != 0;
      if (in_stack) out.push_back({(end - start) / 1024, 0});
      guard_end = perms == "---p" && end - start == 4096 ? end : 0;
      continue;
    }
    if (in_stack && line.rfind("Rss:", 0) == 0) out.back().resident_kb = std::stoull(line.substr(4));
  }
  return out;
}

}  // namespace

TEST_CASE("coroutine stacks: a connection that served the seed route holds two pages of its stack",
          "[memory]") {
  mock_downstream mock({"--delay", "0ms"});
  gateway_process gw(seed_config{mock.url()}.yaml());
  // The first requests on each I/O thread set up its thread-local state (deeper, once): on connections
  // that close, whose stacks go with them.
  for (int i = 0; i < 8; ++i)
    check_offer(http_get(gw.port(), offer_target("W" + std::to_string(i))), "W" + std::to_string(i));

  std::vector<http_connection> open;
  for (int i = 0; i < 12; ++i) {
    open.emplace_back(gw.port());
    const auto sku = "S" + std::to_string(i);
    check_offer(open.back().get(offer_target(sku)), sku);
    check_offer(open.back().get(offer_target(sku)), sku);  // and a second request on the same stack
  }
  const auto stacks = coroutine_stacks(gw.process().pid());
  std::size_t checked = 0;
  for (const auto& s : stacks) {
    if (s.size_kb != 64) continue;  // other stacks: an ASan build's are 4 times as large, its frames too
    ++checked;
    INFO("a 64 KiB coroutine stack with " << s.resident_kb << " KiB resident");
    CHECK(s.resident_kb <= 8);
  }
  if (checked == 0) {
    WARN("no 64 KiB coroutine stack (a sanitizer build): not checked");
  } else {
    // Most open connections' stacks were seen: a stack whose mapping borders another of the same kind
    // above it is merged with it by the kernel (one mapping, another size) and not told apart.
    CHECK(checked >= open.size() / 2);
  }
}
