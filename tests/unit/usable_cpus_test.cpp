#include "gateway/runtime/usable_cpus.hpp"

#include <catch2/catch.hpp>

#include <sched.h>

using namespace gateway;

TEST_CASE("a cgroup cpu.max gives its CPU limit, rounded up") {
  CHECK(cpu_limit_from_cpu_max("200000 100000\n") == 2U);
  CHECK(cpu_limit_from_cpu_max("150000 100000") == 2U);
  CHECK(cpu_limit_from_cpu_max("50000 100000") == 1U);
  CHECK(cpu_limit_from_cpu_max("max 100000\n") == std::nullopt);
  CHECK(cpu_limit_from_cpu_max("") == std::nullopt);
  CHECK(cpu_limit_from_cpu_max("12x 100000") == std::nullopt);
  CHECK(cpu_limit_from_cpu_max("100000 0") == std::nullopt);
}

TEST_CASE("usable CPUs never exceed the affinity mask") {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(::sched_getaffinity(0, sizeof(set), &set) == 0);
  const auto cpus = usable_cpus();
  CHECK(cpus >= 1);
  CHECK(cpus <= static_cast<unsigned>(CPU_COUNT(&set)));
}
