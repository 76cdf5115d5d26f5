#include "gateway/tls/certificate_reloader.hpp"

#include "gateway/tls/tls_server_context.hpp"

#include <spdlog/spdlog.h>

namespace gateway {

certificate_reloader::certificate_reloader(const listener_tls_settings& settings)
    : settings_(settings), current_(std::move(settings_.context)) {  // held once, here
  if (current_) not_after_ = current_->not_after();
}

certificate_reloader::~certificate_reloader() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(stop_mutex_);
    stopping_ = true;
  }
  stop_wake_.notify_all();
  thread_.join();
}

void certificate_reloader::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { run(); });
}

std::shared_ptr<const tls_server_context> certificate_reloader::current() const {
  std::lock_guard lock(mutex_);
  return current_;
}

void certificate_reloader::run() {
  std::unique_lock lock(stop_mutex_);
  while (!stop_wake_.wait_for(lock, settings_.reload_interval, [this] { return stopping_; })) {
    lock.unlock();
    check();
    lock.lock();
  }
}

void certificate_reloader::check() {
  tls_server_context::pem_files files;
  tls_server_context::problem why;
  // A file that cannot be read now (the moment of a swap, a Secret being recreated) is tried again at the
  // next check: the certificate served stays, nothing is counted until a pair is read.
  if (!tls_server_context::read_files(settings_, files, why)) {
    spdlog::debug("server.tls: {}; keeping the current certificate", why.message);
    return;
  }
  const auto digest = tls_server_context::digest_of(files);
  if (digest == current()->files_digest()) return;
  if (any_failed_ && digest == failed_digest_) return;  // reported already
  auto made = tls_server_context::make(settings_, files, why);
  if (!made) {
    failed_.fetch_add(1, std::memory_order_relaxed);
    failed_digest_ = digest;
    any_failed_ = true;
    spdlog::error("server.tls.{}: {}; the changed files are not used, the current certificate stays", why.key,
                  why.message);
    return;
  }
  const auto not_after = made->not_after();
  {
    std::lock_guard lock(mutex_);
    current_ = std::move(made);
  }
  any_failed_ = false;
  not_after_.store(not_after, std::memory_order_relaxed);
  succeeded_.fetch_add(1, std::memory_order_relaxed);
  spdlog::info("server.tls: certificate reloaded from '{}' and '{}'", settings_.cert_file,
               settings_.key_file);
}

}  // namespace gateway
