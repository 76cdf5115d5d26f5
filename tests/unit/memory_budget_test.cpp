// The process-wide budget for buffered answers: charges within it succeed, one that would exceed it
// fails and counts nothing, and "exhausted" (new requests shed) holds from the budget on.

#include "gateway/runtime/memory_budget.hpp"

#include <catch2/catch.hpp>

using namespace gateway;

TEST_CASE("memory budget: charges stay within the budget, 0 means unlimited") {
  memory_budget::configure(1000);
  const auto base = memory_budget::used();
  REQUIRE(base == 0);
  CHECK(memory_budget::try_charge(600));
  CHECK_FALSE(memory_budget::try_charge(401));  // would make 1001
  CHECK(memory_budget::used() == 600);
  CHECK_FALSE(memory_budget::exhausted());
  CHECK(memory_budget::try_charge(400));
  CHECK(memory_budget::exhausted());
  memory_budget::release(1000);
  CHECK_FALSE(memory_budget::exhausted());
  memory_budget::force_charge(5000);  // bytes already held change hands: counted even over the budget
  CHECK(memory_budget::exhausted());
  memory_budget::release(5000);

  memory_budget::configure(0);
  CHECK(memory_budget::try_charge(std::size_t{1} << 40));
  CHECK_FALSE(memory_budget::exhausted());
  memory_budget::release(std::size_t{1} << 40);
  CHECK(memory_budget::used() == 0);
  CHECK(memory_budget::derive_default() > 0);
}
