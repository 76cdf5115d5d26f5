#include "gateway/observe/tracing.hpp"

#include "gateway/observe/otlp_encoding.hpp"
#include "gateway/observe/otlp_http_sender.hpp"
#include "gateway/observe/trace_queue.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <random>
#include <stdexcept>
#include <vector>

namespace gateway {

// Shared by the tracer and its export thread (each holds a shared_ptr), so that a thread left to end by
// itself after shutdown() never outlives what it uses.
class tracer_state {
 public:
  explicit tracer_state(const tracing_settings& s)
      : settings(s), queue(s.max_queue_spans), sender(s.endpoint), random_(std::random_device{}()) {}

  void run();  // the export thread

  const tracing_settings settings;
  trace_queue queue;
  otlp_http_sender sender;
  std::atomic<bool> accepting{true};  // false once shutdown() began
  std::atomic<std::uint64_t> dropped{0};
  std::atomic<std::uint64_t> exported{0};
  std::atomic<std::uint64_t> export_failures{0};

  std::mutex mutex;                 // guards the three fields below
  std::condition_variable wake;     // for the export thread: a full batch, or shutdown
  std::condition_variable stopped;  // for shutdown(): the export thread ended
  bool stopping = false;
  clock::time_point stop_deadline;
  bool finished = false;

 private:
  bool export_batch(clock::time_point deadline);
  clock::duration backoff(unsigned failures);

  std::vector<trace_record> batch_;
  bool failing_ = false;  // the last export failed (for logging a run of failures once)
  std::minstd_rand random_;
};

void tracer_state::run() {
  try {
    auto next_export = clock::now() + settings.batch_delay;  // for a batch that is not full
    clock::time_point resume_at{};                           // the end of a backoff
    unsigned failures = 0;
    for (;;) {
      {
        std::unique_lock lock(mutex);
        // submit() takes this mutex before it notifies, so a full batch's wake-up is never missed; the
        // timed wait is for batch_delay and the end of a backoff.
        wake.wait_until(lock, std::max(next_export, resume_at), [&] {
          return stopping || (queue.spans() >= settings.max_batch_spans && clock::now() >= resume_at);
        });
        if (stopping) break;
      }
      const auto now = clock::now();
      if (now < resume_at || (queue.spans() < settings.max_batch_spans && now < next_export)) continue;
      if (queue.spans() > 0) {
        if (export_batch(now + settings.export_timeout)) {
          failures = 0;
        } else {
          resume_at = clock::now() + backoff(++failures);
        }
      }
      next_export = clock::now() + settings.batch_delay;
    }
    // Shutdown: what is queued goes out by the deadline, backoff or not; a failure ends the flush.
    clock::time_point deadline;
    {
      std::lock_guard lock(mutex);
      deadline = stop_deadline;
    }
    while (queue.spans() > 0 && clock::now() < deadline) {
      if (!export_batch(std::min(clock::now() + settings.export_timeout, deadline))) break;
    }
  } catch (const std::exception& e) {
    spdlog::error("tracing: the export thread stopped: {}", e.what());
  }
  accepting.store(false, std::memory_order_release);  // also when the thread stopped on an exception
  batch_.clear();
  while (const auto spans = queue.pop(batch_, queue.max_spans())) {
    dropped.fetch_add(spans, std::memory_order_relaxed);
    batch_.clear();
  }
  {
    std::lock_guard lock(mutex);
    finished = true;
  }
  stopped.notify_all();
}

// Takes up to a batch from the queue and POSTs it by `deadline`. False when that failed: its spans are
// dropped. Logs the first failure of a run of failures and the recovery, not each one.
bool tracer_state::export_batch(clock::time_point deadline) {
  batch_.clear();
  const std::size_t spans = queue.pop(batch_, settings.max_batch_spans);
  if (spans == 0) return true;
  std::string error;
  try {
    std::string body = encode_export_request(batch_, settings.service_name);
    batch_.clear();  // the spans' memory goes before the wait
    error = sender.post(std::move(body), deadline);
  } catch (const std::exception& e) {
    error = e.what();
  }
  batch_.clear();
  if (error.empty()) {
    exported.fetch_add(spans, std::memory_order_relaxed);
    if (std::exchange(failing_, false))
      spdlog::info("tracing: exports to {} succeed again", settings.endpoint);
    return true;
  }
  export_failures.fetch_add(1, std::memory_order_relaxed);
  dropped.fetch_add(spans, std::memory_order_relaxed);
  if (!std::exchange(failing_, true)) {
    spdlog::warn("tracing: export of {} spans to {} failed ({}); spans are dropped until an export succeeds",
                 spans, settings.endpoint, error);
  }
  return false;
}

// batch_delay doubled per failure in a row, at most max_backoff; half of it fixed, half random, so that
// gateways that failed together do not come back together.
clock::duration tracer_state::backoff(unsigned failures) {
  const double base = std::chrono::duration<double>(settings.batch_delay).count();
  const double cap = std::chrono::duration<double>(settings.max_backoff).count();
  const double full = std::min(cap, std::ldexp(base, static_cast<int>(std::min(failures - 1, 30u))));
  const double seconds = full / 2 + std::uniform_real_distribution<double>(0, full / 2)(random_);
  return std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(seconds));
}

void check_tracing_settings(const tracing_settings& s) {
  const auto fail = [](const std::string& what) { throw std::invalid_argument("tracing: " + what); };
  if (!(s.sample_ratio >= 0.0 && s.sample_ratio <= 1.0)) fail("sample_ratio must be within 0 and 1");
  if (s.service_name.empty()) fail("service_name must not be empty");
  if (s.max_batch_spans < 1) fail("max_batch_spans must be at least 1");
  if (s.max_queue_spans < s.max_batch_spans) fail("max_queue_spans must be at least max_batch_spans");
  if (s.batch_delay <= microseconds::zero()) fail("batch_delay must be positive");
  if (s.export_timeout <= microseconds::zero()) fail("export_timeout must be positive");
  if (s.max_backoff < microseconds::zero()) fail("max_backoff must not be negative");
  try {
    otlp_http_sender check(s.endpoint);
  } catch (const std::invalid_argument& e) {
    fail(std::string("endpoint: ") + e.what());
  }
}

tracer::tracer(tracing_settings settings) : settings_(std::move(settings)) {
  check_tracing_settings(settings_);
  if (!settings_.enabled) return;
  state_ = std::make_shared<tracer_state>(settings_);
  thread_ = std::thread([s = state_] { s->run(); });
}

tracer::~tracer() {
  shutdown(clock::now());
}

void tracer::submit(trace_record&& record, bool degraded_or_failed) noexcept {
  if (!state_ || !keep(record, degraded_or_failed)) return;
  auto& s = *state_;
  const std::size_t spans = record.span_count();
  if (!s.accepting.load(std::memory_order_acquire) || !s.queue.try_push(record)) {
    s.dropped.fetch_add(spans, std::memory_order_relaxed);
    return;
  }
  // Only the push that fills a batch wakes the export thread; the others leave it asleep. It takes the
  // export thread's mutex first (once per batch, not per request): between that thread's look at the queue
  // and its wait, a notify without the mutex was lost, and a full batch then waited for batch_delay.
  const std::size_t queued = s.queue.spans();
  const std::size_t batch = settings_.max_batch_spans;
  if (queued >= batch && queued - spans < batch) {
    { const std::lock_guard lock(s.mutex); }
    s.wake.notify_one();
  }
}

void tracer::shutdown(clock::time_point deadline) {
  if (!state_ || !thread_.joinable()) return;
  auto& s = *state_;
  s.accepting.store(false, std::memory_order_release);
  std::unique_lock lock(s.mutex);
  s.stopping = true;
  s.stop_deadline = deadline;
  s.wake.notify_one();
  if (!s.stopped.wait_until(lock, deadline, [&] { return s.finished; })) {
    // A POST begun before shutdown, with a later deadline of its own: cut short.
    s.sender.abort();
    s.stopped.wait_for(lock, std::chrono::milliseconds(100), [&] { return s.finished; });
  }
  const bool finished = s.finished;
  lock.unlock();
  if (finished) {
    thread_.join();
  } else {
    thread_.detach();  // inside getaddrinfo: it ends by itself, holding its own reference to the state
  }
}

std::uint64_t tracer::dropped() const {
  return state_ ? state_->dropped.load(std::memory_order_relaxed) : 0;
}
std::uint64_t tracer::exported() const {
  return state_ ? state_->exported.load(std::memory_order_relaxed) : 0;
}
std::uint64_t tracer::export_failures() const {
  return state_ ? state_->export_failures.load(std::memory_order_relaxed) : 0;
}
std::size_t tracer::queued_spans() const {
  return state_ ? state_->queue.spans() : 0;
}

}  // namespace gateway
