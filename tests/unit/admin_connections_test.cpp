// admin_connections: every new connection is admitted; at a cap the one of the right scope that has
// waited longest for a request head is closed, and a head that arrived moves a connection to the back.

#include "gateway/server/admin_connections.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

using namespace gateway;

namespace {

admin_connections::address address_of(std::uint8_t last) {
  admin_connections::address a{};
  a[10] = a[11] = 0xff;  // IPv4-mapped 10.0.0.last
  a[12] = 10;
  a[15] = last;
  return a;
}

// Connections named by a string; `closed` lists the names whose close callback ran, in order.
struct fixture {
  admin_connections table;
  std::vector<std::unique_ptr<admin_connections::member>> members;
  std::vector<std::string> closed;

  fixture(std::size_t total, std::size_t per_client) : table(total, per_client) {}

  admin_connections::member& open(const std::string& name, std::uint8_t from) {
    members.push_back(std::make_unique<admin_connections::member>(address_of(from),
                                                                  [this, name] { closed.push_back(name); }));
    table.admit(*members.back());
    return *members.back();
  }
};

}  // namespace

TEST_CASE("admin connections: at the total cap the longest waiting connection makes room", "[admin]") {
  fixture f(3, 0);
  auto& a = f.open("a", 1);
  f.open("b", 2);
  f.open("c", 3);
  CHECK(f.closed.empty());
  f.open("d", 4);
  CHECK(f.closed == std::vector<std::string>{"a"});
  CHECK(a.evicted());
  CHECK(f.table.size() == 3);
  CHECK(f.table.evicted_for_total() == 1);
  CHECK(f.table.evicted_for_client() == 0);
}

TEST_CASE("admin connections: without a cap per address, one address fills the total cap", "[admin]") {
  fixture f(2, 0);
  f.open("a", 1);
  f.open("b", 1);
  f.open("c", 1);
  CHECK(f.closed == std::vector<std::string>{"a"});
  CHECK(f.table.evicted_for_total() == 1);
  CHECK(f.table.evicted_for_client() == 0);
}

TEST_CASE("admin connections: a head that arrived moves a connection to the back", "[admin]") {
  fixture f(3, 0);
  auto& a = f.open("a", 1);
  f.open("b", 2);
  f.open("c", 3);
  f.table.refresh(a);
  f.open("d", 4);
  f.open("e", 5);
  CHECK(f.closed == std::vector<std::string>{"b", "c"});
  CHECK_FALSE(a.evicted());
}

TEST_CASE("admin connections: a crowded address makes room among its own connections only", "[admin]") {
  fixture f(10, 2);
  f.open("other", 9);  // the oldest of all, from another address
  f.open("x1", 1);
  f.open("x2", 1);
  f.open("x3", 1);
  f.open("x4", 1);
  CHECK(f.closed == std::vector<std::string>{"x1", "x2"});
  CHECK(f.table.size() == 3);
  CHECK(f.table.evicted_for_client() == 2);
  CHECK(f.table.evicted_for_total() == 0);
}

TEST_CASE("admin connections: the newest connection is the last one a flood closes", "[admin]") {
  // A probe arrives among a flood from its own address; it is closed only after max_per_client newer
  // connections from that address, i.e. never when its head comes first.
  fixture f(100, 4);
  for (int i = 0; i < 10; ++i) f.open("flood" + std::to_string(i), 1);
  auto& probe = f.open("probe", 1);
  for (int i = 10; i < 13; ++i) f.open("flood" + std::to_string(i), 1);
  CHECK_FALSE(probe.evicted());
  f.table.refresh(probe);  // its head arrived
  for (int i = 13; i < 16; ++i) f.open("flood" + std::to_string(i), 1);
  CHECK_FALSE(probe.evicted());
  f.open("flood16", 1);
  CHECK(probe.evicted());
}

TEST_CASE("admin connections: leaving, and destroying a linked member, unlink it", "[admin]") {
  fixture f(2, 1);
  auto& a = f.open("a", 1);
  f.table.leave(a);
  f.table.leave(a);  // no-op
  CHECK(f.table.size() == 0);
  f.open("b", 1);
  CHECK(f.closed.empty());  // a's slot was free again
  f.members.back().reset();
  CHECK(f.table.size() == 0);
  f.open("c", 2);
  f.open("d", 3);
  f.open("e", 3);  // per client 1: d makes room
  CHECK(f.closed == std::vector<std::string>{"d"});
  f.table.refresh(*f.members[0]);  // evicted or gone members are no-ops
}

TEST_CASE("admin connections: a cap of one per address within a cap of one in all", "[admin]") {
  fixture f(1, 1);
  f.open("a", 1);
  f.open("b", 1);
  f.open("c", 2);
  CHECK(f.closed == std::vector<std::string>{"a", "b"});
  CHECK(f.table.size() == 1);
  CHECK(f.table.evicted_for_client() == 1);
  CHECK(f.table.evicted_for_total() == 1);
}

TEST_CASE("admin connections: close_all closes every connection without counting evictions", "[admin]") {
  fixture f(10, 0);
  auto& a = f.open("a", 1);
  f.open("b", 2);
  f.table.close_all();
  CHECK(f.closed == std::vector<std::string>{"a", "b"});
  CHECK(a.evicted());
  CHECK(f.table.size() == 0);
  CHECK(f.table.evicted_for_client() + f.table.evicted_for_total() == 0);
}
