#include "gateway/limit/redis_link.hpp"

#include "gateway/runtime/thread_random.hpp"
#include "gateway/tls/tls_client_context.hpp"

#include <hiredis/hiredis.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <vector>

namespace gateway {

namespace net = boost::asio;
using boost::system::error_code;
using std::chrono::milliseconds;

namespace {

constexpr milliseconds first_backoff{100};
constexpr milliseconds max_backoff{5000};

void rethrow(std::exception_ptr e) {
  if (e) std::rethrow_exception(e);
}

}  // namespace

void redis_reply_deleter::operator()(redisReply* r) const {
  freeReplyObject(r);
}

std::string redis_command(std::initializer_list<std::string_view> args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> sizes;
  argv.reserve(args.size());
  sizes.reserve(args.size());
  for (const auto& a : args) {
    argv.push_back(a.data());
    sizes.push_back(a.size());
  }
  char* bytes = nullptr;
  const int n = redisFormatCommandArgv(&bytes, static_cast<int>(argv.size()), argv.data(), sizes.data());
  if (n < 0) throw std::bad_alloc();
  std::string command(bytes, static_cast<std::size_t>(n));
  redisFreeCommand(bytes);
  return command;
}

// A caller of submit(), on its coroutine's stack while it waits: woken by its timer, expiring at its
// deadline or cancelled by the link when its reply came or the link broke (`done`).
struct redis_link::waiter {
  explicit waiter(const net::any_io_executor& ex) : timer(ex) {}
  net::steady_timer timer;
  redis_result result;
  bool done = false;
  slot* position = nullptr;  // its slot in fifo_ while not done
};

redis_link::redis_link(net::any_io_executor ex, const redis_settings& settings,
                       std::shared_ptr<const tls_client_context> tls)
    : ex_(ex),
      settings_(settings),
      tls_context_(std::move(tls)),
      resolver_(ex),
      socket_(ex),
      connect_timer_(ex),
      backoff_timer_(ex),
      overdue_timer_(ex),
      reader_(nullptr, &redisReaderFree) {}

redis_link::~redis_link() = default;

void redis_link::enter(state next) {
  static constexpr bool legal[5][5] = {
      // to: idle connecting ready backoff closed
      {false, true, false, false, true},   // from idle
      {false, false, true, true, true},    // from connecting
      {false, false, false, true, true},   // from ready
      {false, true, false, false, true},   // from backoff
      {false, false, false, false, false}  // from closed
  };
  if (!legal[static_cast<int>(state_)][static_cast<int>(next)]) std::abort();
  state_ = next;
}

void redis_link::start() {
  if (state_ != state::idle) return;
  enter(state::connecting);
  net::spawn(
      ex_, [self = shared_from_this()](net::yield_context yield) { self->run(yield); }, rethrow);
}

void redis_link::close() {
  if (state_ == state::closed) return;
  enter(state::closed);
  resolver_.cancel();
  shut_socket();
  connect_timer_.cancel();
  backoff_timer_.cancel();
  overdue_timer_.cancel();
  fail_waiters();
  write_wake_.notify();
}

redis_result redis_link::submit(std::string_view command, clock::time_point deadline,
                                net::yield_context yield) {
  if (state_ != state::ready || fifo_.size() >= settings_.max_outstanding) {
    counts_.refused.fetch_add(1, std::memory_order_relaxed);
    return {redis_status::unavailable, nullptr};
  }
  const auto now = clock::now();
  const auto due = std::min(deadline, now + settings_.timeout);
  if (due <= now) {
    counts_.timeouts.fetch_add(1, std::memory_order_relaxed);
    return {redis_status::timeout, nullptr};
  }
  waiter me(ex_);
  me.timer.expires_at(due);
  fifo_.push_back({&me, now, false});
  me.position = &fifo_.back();  // deque: a reference stays valid while other slots come and go at the ends
  queued_.append(command);
  counts_.commands.fetch_add(1, std::memory_order_relaxed);
  write_wake_.notify();
  error_code ec;
  me.timer.async_wait(yield[ec]);
  if (!me.done) {
    me.position->caller = nullptr;
    counts_.timeouts.fetch_add(1, std::memory_order_relaxed);
    return {redis_status::timeout, nullptr};
  }
  return std::move(me.result);
}

void redis_link::run(net::yield_context yield) {
  for (;;) {
    if (state_ == state::closed) return;
    if (state_ != state::connecting) enter(state::connecting);
    counts_.connect_attempts.fetch_add(1, std::memory_order_relaxed);
    if (!connect(yield)) {
      if (state_ == state::closed) return;
      counts_.connect_failures.fetch_add(1, std::memory_order_relaxed);
      enter(state::backoff);
      wait_backoff(yield);
      continue;
    }
    counts_.connects.fetch_add(1, std::memory_order_relaxed);
    served_ = false;
    reader_.reset(redisReaderCreate());
    if (!reader_) throw std::bad_alloc();
    enter(state::ready);
    // Queued first, so they go out at once; callers' commands follow without waiting for their replies
    // (no round trip of their own), and an error reply to them fails those callers with the link.
    const auto now = clock::now();
    if (!settings_.password.empty()) {
      queued_ += settings_.username.empty() ? redis_command({"AUTH", settings_.password})
                                            : redis_command({"AUTH", settings_.username, settings_.password});
      fifo_.push_back({nullptr, now, true});
    }
    if (settings_.database != 0) {
      queued_ += redis_command({"SELECT", std::to_string(settings_.database)});
      fifo_.push_back({nullptr, now, true});
    }
    spawn_helper(&redis_link::write_commands);
    spawn_helper(&redis_link::watch_overdue);
    read_replies(yield);
    break_link();
    while (helpers_ > 0) helpers_done_.wait(yield);
    tls_.reset();
    reader_.reset();
    queued_.clear();
    writing_.clear();
    if (state_ == state::closed) return;
    if (served_) backoff_ = milliseconds(0);  // a working server went away: try again at once
    wait_backoff(yield);
  }
}

bool redis_link::connect(net::yield_context yield) {
  const auto attempt = ++generation_;
  connect_timer_.expires_after(settings_.connect_timeout);
  connect_timer_.async_wait([self = shared_from_this(), attempt](const error_code& ec) {
    if (ec || self->generation_ != attempt || self->state_ != state::connecting) return;
    self->last_error_ = "connect timed out";
    self->resolver_.cancel();
    self->shut_socket();
  });
  const auto failed = [this](const char* step, const error_code& ec) {
    if (ec != net::error::operation_aborted) last_error_ = std::string(step) + ": " + ec.message();
    connect_timer_.cancel();
    shut_socket();
    tls_.reset();
    return false;
  };
  error_code ec;
  const auto endpoints = resolver_.async_resolve(settings_.host, std::to_string(settings_.port), yield[ec]);
  if (ec || state_ != state::connecting) return failed("resolve", ec ? ec : net::error::operation_aborted);
  net::async_connect(socket_, endpoints, yield[ec]);
  if (ec || state_ != state::connecting) return failed("connect", ec ? ec : net::error::operation_aborted);
  socket_.set_option(net::ip::tcp::no_delay(true), ec);
  if (tls_context_) {
    tls_ = std::make_unique<tls_stream>(socket_, tls_context_->native());
    if (!tls_context_->prepare(tls_->native_handle()))
      return failed("TLS setup", make_error_code(std::errc::not_enough_memory));
    tls_->async_handshake(net::ssl::stream_base::client, yield[ec]);
    if (ec || state_ != state::connecting)
      return failed("TLS handshake", ec ? ec : net::error::operation_aborted);
  }
  connect_timer_.cancel();
  return true;
}

void redis_link::read_replies(net::yield_context yield) {
  for (;;) {
    error_code ec;
    const std::size_t n = tls_ ? tls_->async_read_some(net::buffer(read_buffer_), yield[ec])
                               : socket_.async_read_some(net::buffer(read_buffer_), yield[ec]);
    if (state_ != state::ready) return;
    if (ec) {
      last_error_ = "read: " + ec.message();
      return;
    }
    if (redisReaderFeed(reader_.get(), read_buffer_.data(), n) != REDIS_OK) return;
    for (;;) {
      void* parsed = nullptr;
      if (redisReaderGetReply(reader_.get(), &parsed) != REDIS_OK) {
        last_error_ = std::string("protocol error: ") + reader_->errstr;
        return;
      }
      if (parsed == nullptr) break;
      if (!deliver(redis_reply_ptr(static_cast<redisReply*>(parsed)))) return;
    }
  }
}

bool redis_link::deliver(redis_reply_ptr reply) {
  counts_.replies.fetch_add(1, std::memory_order_relaxed);
  if (fifo_.empty()) {
    last_error_ = "a reply to no command";
    return false;
  }
  const slot s = fifo_.front();
  fifo_.pop_front();
  const bool error = reply->type == REDIS_REPLY_ERROR;
  if (s.own) {
    if (!error) return true;
    counts_.auth_failures.fetch_add(1, std::memory_order_relaxed);
    last_error_ = "AUTH or SELECT refused: " + std::string(reply->str, reply->len);
    return false;
  }
  if (!error) served_ = true;
  if (s.caller != nullptr) {
    s.caller->result = {redis_status::ok, std::move(reply)};
    s.caller->done = true;
    s.caller->timer.cancel();  // resumes it through the io_context's queue, after this returns
  }
  return true;
}

void redis_link::write_commands(std::uint64_t generation, net::yield_context yield) {
  while (current(generation)) {
    if (queued_.empty()) {
      write_wake_.wait(yield);
      continue;
    }
    // Everything queued since the last write goes in this one; what arrives meanwhile, in the next.
    writing_.swap(queued_);
    error_code ec;
    if (tls_)
      net::async_write(*tls_, net::buffer(writing_), yield[ec]);
    else
      net::async_write(socket_, net::buffer(writing_), yield[ec]);
    counts_.writes.fetch_add(1, std::memory_order_relaxed);
    writing_.clear();
    if (ec) {
      if (current(generation)) {
        last_error_ = "write: " + ec.message();
        shut_socket();  // the reader sees it and breaks the link
      }
      return;
    }
  }
}

void redis_link::watch_overdue(std::uint64_t generation, net::yield_context yield) {
  const auto limit = settings_.timeout + settings_.hung_after;
  while (current(generation)) {
    overdue_timer_.expires_at(fifo_.empty() ? clock::now() + limit : fifo_.front().queued + limit);
    error_code ec;
    overdue_timer_.async_wait(yield[ec]);
    if (!current(generation)) return;
    if (!fifo_.empty() && clock::now() - fifo_.front().queued >= limit) {
      counts_.hung.fetch_add(1, std::memory_order_relaxed);
      last_error_ = "replies overdue: the server seems hung";
      shut_socket();
      return;
    }
  }
}

void redis_link::spawn_helper(void (redis_link::*body)(std::uint64_t, net::yield_context)) {
  ++helpers_;
  net::spawn(
      ex_,
      [self = shared_from_this(), body, generation = generation_](net::yield_context yield) {
        ((*self).*body)(generation, yield);
        if (--self->helpers_ == 0) self->helpers_done_.notify();
      },
      rethrow);
}

void redis_link::break_link() {
  if (state_ == state::ready) enter(state::backoff);
  counts_.breaks.fetch_add(1, std::memory_order_relaxed);
  shut_socket();
  fail_waiters();
  write_wake_.notify();
  overdue_timer_.cancel();
}

void redis_link::fail_waiters() {
  auto pending = std::move(fifo_);
  fifo_.clear();
  for (auto& s : pending) {
    if (s.caller == nullptr) continue;
    s.caller->result.state = redis_status::unavailable;
    s.caller->done = true;
    s.caller->timer.cancel();  // resumes it through the io_context's queue
    counts_.failed.fetch_add(1, std::memory_order_relaxed);
  }
}

void redis_link::wait_backoff(net::yield_context yield) {
  if (state_ == state::closed) return;
  const auto delay = backoff_;
  backoff_ = backoff_ == milliseconds(0) ? first_backoff : std::min(backoff_ * 2, max_backoff);
  if (delay == milliseconds(0)) return;
  // Between half the delay and all of it: replicas that lost the server together do not return together.
  const auto half = delay.count() / 2;
  const auto jittered = milliseconds(half + static_cast<long long>(thread_random() % (half + 1)));
  backoff_timer_.expires_after(jittered);
  error_code ec;
  backoff_timer_.async_wait(yield[ec]);
}

void redis_link::shut_socket() {
  error_code ignored;
  socket_.close(ignored);
}

}  // namespace gateway
