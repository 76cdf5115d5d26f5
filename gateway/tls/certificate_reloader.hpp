#pragma once
// The public listener's current TLS context, and its certificate reloaded when the files change. A
// background thread reads cert_file and key_file every reload_interval and compares their contents with
// those the current context was built from (a Kubernetes Secret mount swaps a `..data` symlink: the file
// names stay, what they lead to changes). A changed pair is built and checked completely first
// (tls_server_context); on success new handshakes use it, connections already open keep the context they
// were made from; on failure the current one stays and an error is logged, once per distinct bad pair.
// Reading files blocks, so it never runs on an I/O thread. Beast- and SSL-header-free.

#include "gateway/tls/tls_settings.hpp"

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

namespace gateway {

class certificate_reloader {
 public:
  // Serves `settings.context` (built at load) until the files change. The thread starts with start().
  explicit certificate_reloader(const listener_tls_settings& settings);
  certificate_reloader(const certificate_reloader&) = delete;
  certificate_reloader& operator=(const certificate_reloader&) = delete;
  ~certificate_reloader();  // stops the thread

  void start();

  // The context for a new connection; thread-safe (read once per connection, under a short lock).
  std::shared_ptr<const tls_server_context> current() const;

  // For /metrics; thread-safe.
  std::uint64_t reloads(bool success) const {
    return (success ? succeeded_ : failed_).load(std::memory_order_relaxed);
  }
  std::int64_t not_after() const { return not_after_.load(std::memory_order_relaxed); }

 private:
  void run();
  void check();  // the files once

  listener_tls_settings settings_;  // its context moved to current_
  mutable std::mutex mutex_;        // guards current_
  std::shared_ptr<const tls_server_context> current_;
  std::array<unsigned char, 32> failed_digest_{};  // the last pair that failed (thread only)
  bool any_failed_ = false;
  std::atomic<std::uint64_t> succeeded_{0};
  std::atomic<std::uint64_t> failed_{0};
  std::atomic<std::int64_t> not_after_{0};

  std::mutex stop_mutex_;
  std::condition_variable stop_wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gateway
