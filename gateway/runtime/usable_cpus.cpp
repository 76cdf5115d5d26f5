#include "gateway/runtime/usable_cpus.hpp"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

namespace gateway {

namespace {

std::optional<unsigned> limit_of(long long quota, long long period) {
  if (quota <= 0 || period <= 0) return std::nullopt;
  return static_cast<unsigned>(std::max<long long>(1, (quota + period - 1) / period));
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The path of this process's cgroup v2 directory, from /proc/self/cgroup ("0::/path").
std::string cgroup_v2_dir() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + line.substr(3);
  }
  return "/sys/fs/cgroup";
}

std::optional<unsigned> cgroup_cpu_limit() {
  // cgroup v2: the limit of this cgroup or of any parent up to the root of the mounted hierarchy.
  std::string dir = cgroup_v2_dir();
  std::optional<unsigned> limit;
  for (;;) {
    if (auto text = read_file(dir + "/cpu.max")) {
      if (auto l = cpu_limit_from_cpu_max(*text)) limit = std::min(limit.value_or(*l), *l);
    }
    if (dir.size() <= std::string("/sys/fs/cgroup").size()) break;
    dir.erase(dir.rfind('/'));
  }
  if (limit) return limit;
  // cgroup v1.
  auto quota = read_file("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
  auto period = read_file("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  if (!quota || !period) return std::nullopt;
  try {
    return limit_of(std::stoll(*quota), std::stoll(*period));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<unsigned> cpu_limit_from_cpu_max(const std::string& text) {
  std::istringstream in(text);
  std::string quota;
  long long period = 0;
  if (!(in >> quota >> period) || quota == "max") return std::nullopt;
  try {
    std::size_t used = 0;
    const long long q = std::stoll(quota, &used);
    if (used != quota.size()) return std::nullopt;
    return limit_of(q, period);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

unsigned usable_cpus() {
  unsigned cpus = std::max(1U, std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) cpus = std::max(1, CPU_COUNT(&set));
  if (auto limit = cgroup_cpu_limit()) cpus = std::min(cpus, *limit);
  return cpus;
}

}  // namespace gateway
