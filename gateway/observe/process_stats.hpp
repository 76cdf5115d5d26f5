#pragma once
// The process's own figures for /metrics, read from /proc.

#include <cstdint>

namespace gateway {

struct process_stats {
  double cpu_seconds = 0;  // user + system
  std::uint64_t resident_bytes = 0;
  std::uint64_t open_fds = 0;
  std::uint64_t max_fds = 0;
  double start_time_seconds = 0;  // since the Unix epoch
};

process_stats read_process_stats();

// Raises the soft open-file limit to the hard limit; returns the limit now in force.
std::uint64_t raise_open_file_limit();

}  // namespace gateway
