#pragma once
// How many CPUs this process can really use: the CPUs of its affinity mask, lowered to the CPU limit of
// its cgroup (cgroup v2 cpu.max, or v1 cpu.cfs_quota_us / cpu.cfs_period_us), rounded up. In a container
// with a CPU limit this is the limit, not the node's CPU count that hardware_concurrency() reports.

#include <optional>
#include <string>

namespace gateway {

unsigned usable_cpus();

// The CPU limit in a cgroup v2 "cpu.max" text ("max 100000" = none, "150000 100000" = 2 CPUs, rounded
// up), or nullopt when there is none or the text is malformed. Exposed for tests.
std::optional<unsigned> cpu_limit_from_cpu_max(const std::string& text);

}  // namespace gateway
