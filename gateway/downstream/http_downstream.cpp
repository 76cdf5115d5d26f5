#include "gateway/downstream/http_downstream.hpp"

#include "gateway/core/memory_budget.hpp"
#include "gateway/downstream/connection_pool.hpp"
#include "gateway/downstream/response_parser.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <new>
#include <optional>
#include <stdexcept>
#include <utility>

namespace gateway {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;

namespace {

constexpr std::size_t response_header_limit = 16 * 1024;
// Unparsed bytes a connection may hold: a header in progress, or a chunk header line (body bytes go to
// the body as they are parsed).
constexpr std::size_t read_buffer_limit = response_header_limit + 4096;

// Marks the result of a failed exchange: the parent's cancellation wins over the error it caused.
void mark_failed(call_result& r, const cancel_source& cancel, const error_code& ec, const char* what) {
  if (cancel.cancelled()) {
    r.outcome = call_outcome::cancelled;
    r.detail = "cancelled";
  } else if (ec == beast::error::timeout || ec == net::error::timed_out) {
    r.outcome = call_outcome::timeout;
    r.detail = "timeout";
  } else {
    r.outcome = call_outcome::error;
    r.detail = what;
  }
}

bool retryable(const error_code& ec) {
  return ec == http::error::end_of_stream || ec == net::error::connection_reset || ec == net::error::eof ||
         ec == net::error::broken_pipe || ec == http::error::partial_message;
}

}  // namespace

http_downstream::http_downstream(const downstream_settings& settings,
                                 const std::vector<net::io_context*>& workers, host_resolver& resolver)
    : settings_(settings) {
  const auto address = resolver.add(settings_.name, settings_.host, settings_.port, settings_.dns_refresh);
  // RFC 9110 7.2 / RFC 3986 3.2.2: an IPv6 literal is written in brackets.
  const bool ipv6_literal = settings_.host.find(':') != std::string::npos;
  const auto name = ipv6_literal ? "[" + settings_.host + "]" : settings_.host;
  const auto host = settings_.port == 80 ? name : name + ":" + std::to_string(settings_.port);
  head_prefix_ = "GET " + settings_.base_path;
  head_middle_ = " HTTP/1.1\r\nHost: " + host + "\r\nAccept: application/json\r\nX-Request-Timeout-Ms: ";
  // Each I/O thread keeps an equal share, at least one: fewer connections than threads would be exceeded.
  if (settings_.max_connections < workers.size()) {
    throw std::runtime_error("downstream '" + settings_.name + "': max_connections " +
                             std::to_string(settings_.max_connections) + " is less than the " +
                             std::to_string(workers.size()) +
                             " I/O threads (each keeps its own connections): raise it or set server.threads");
  }
  const std::size_t per_worker = settings_.max_connections / std::max<std::size_t>(1, workers.size());
  for (auto* ioc : workers) {
    pools_.push_back(std::make_unique<connection_pool>(ioc->get_executor(), address, per_worker,
                                                       settings_.connect_timeout, settings_.idle_timeout));
  }
}

http_downstream::~http_downstream() = default;

void http_downstream::close_idle(std::size_t worker) {
  pools_.at(worker)->close_idle();
}

namespace {

constexpr std::string_view request_id_field = "\r\nX-Request-Id: ";
constexpr std::string_view traceparent_field = "\r\ntraceparent: ";
constexpr std::string_view head_end = "\r\n\r\n";
constexpr std::size_t millis_digits = 20;  // the most a 64-bit count of milliseconds takes

char* put(char* out, std::string_view s) {
  std::memcpy(out, s.data(), s.size());
  return out + s.size();
}

std::size_t decimal_size(long long v) {
  std::size_t n = 1;
  for (; v >= 10; v /= 10) ++n;
  return n;
}

}  // namespace

std::size_t http_downstream::head_size(const call_request& request) const {
  std::size_t n = head_prefix_.size() + request.target.size() + head_middle_.size() +
                  decimal_size(millis_left(request.deadline, request.now)) + request_id_field.size() +
                  request.request_id.size() + head_end.size();
  if (!request.traceparent.empty()) n += traceparent_field.size() + request.traceparent.size();
  return n;
}

void http_downstream::write_head(const call_request& request, char* out) const {
  char millis[millis_digits];
  const auto left =
      std::to_chars(millis, millis + sizeof millis, millis_left(request.deadline, request.now)).ptr;
  out = put(out, head_prefix_);
  out = put(out, request.target);
  out = put(out, head_middle_);
  out = put(out, std::string_view(millis, static_cast<std::size_t>(left - millis)));
  out = put(out, request_id_field);
  out = put(out, request.request_id);
  if (!request.traceparent.empty()) {
    out = put(out, traceparent_field);
    out = put(out, request.traceparent);
  }
  put(out, head_end);
}

namespace {

// Memory for calls, kept per I/O thread: a call is allocated and freed for every downstream request, and
// a freed one serves the next without malloc. At most `cap` blocks wait; the rest go back to malloc, and
// the thread's exit returns them all.
class call_memory {
 public:
  static constexpr std::size_t cap = 1024;

  static void* take(std::size_t size) {
    auto& s = state;
    if (s.head != nullptr && size == s.block_size) {
      auto* block = s.head;
      s.head = block->next;
      --s.count;
      return block;
    }
    return ::operator new(size);
  }
  static void give(void* p, std::size_t size) {
    auto& s = state;
    if (s.closed || s.count == cap || (s.block_size != 0 && size != s.block_size) || size < sizeof(block)) {
      ::operator delete(p);
      return;
    }
    if (s.block_size == 0) {
      s.block_size = size;
      static thread_local releaser at_exit;  // constructed with the first block kept
    }
    s.head = new (p) block{s.head};
    ++s.count;
  }

 private:
  struct block {
    block* next;
  };
  struct list {  // trivially destructible: usable until the thread ends
    block* head = nullptr;
    std::size_t count = 0;
    std::size_t block_size = 0;
    bool closed = false;
  };
  struct releaser {
    ~releaser() {
      auto& s = state;
      s.closed = true;
      while (s.head != nullptr) ::operator delete(std::exchange(s.head, s.head->next));
      s.count = 0;
    }
  };
  static thread_local list state;
};

thread_local call_memory::list call_memory::state;

}  // namespace

// One call as a state machine on the I/O thread, without a stack of its own: acquire a connection
// (idle, new, or wait for one at the cap), write the request, read the answer. The cancel_source hook
// closes whatever is pending, so every step ends promptly once the call is cancelled. Deletes itself
// after reporting to the sink.
//
// The exchange costs two system calls when all goes well: the request is sent at once (`send`; Asio's
// async_write only for what the socket does not take), and the answer is read when epoll reports it
// (read_readiness), until nothing more is waiting, never speculatively before it can be there.
class http_call final : public read_readiness::listener {
 public:
  http_call(const http_downstream& downstream, connection_pool& pool, const call_request& request,
            call_sink& sink, std::size_t index)
      : settings_(downstream.settings()),
        pool_(pool),
        sink_(sink),
        index_(index),
        cancel_(*request.cancel),
        deadline_(request.deadline),
        started_(request.now) {
    const std::size_t size = downstream.head_size(request);
    char* out = head_inline_;
    if (size > sizeof head_inline_) {
      head_long_.resize(size);
      out = head_long_.data();
    }
    downstream.write_head(request, out);
    head_ = std::string_view(out, size);
  }

  static void* operator new(std::size_t size) { return call_memory::take(size); }
  static void operator delete(void* p, std::size_t size) { call_memory::give(p, size); }

  void attempt(bool reused_allowed) {
    if (cancel_.cancelled()) return fail(net::error::operation_aborted, "cancelled");
    if (reused_allowed) {
      if (auto conn = pool_.take_idle(started_)) return exchange(std::move(conn));
    }
    if (pool_.reserve_slot(!reused_allowed)) return connect();
    wait_for_connection();
  }

 private:
  using handle = connection_pool::handle;

  void wait_for_connection() {
    timer_.emplace(pool_.executor());
    timer_->expires_at(deadline_);
    waiter_ = {&*timer_, nullptr, false};
    pool_.enqueue(waiter_);
    hook_.emplace(cancel_, [this] { timer_->cancel(); });
    timer_->async_wait([this](const error_code&) { waited(); });
  }

  void waited() {
    hook_.reset();
    pool_.dequeue(waiter_);
    if (waiter_.conn) {
      if (!cancel_.cancelled()) return exchange(std::move(waiter_.conn));
      pool_.release(std::move(waiter_.conn), clock::now());  // pass it on to the next waiter
      return fail(net::error::operation_aborted, "cancelled");
    }
    if (!waiter_.slot_freed) {
      return fail(
          cancel_.cancelled() ? error_code(net::error::operation_aborted) : error_code(net::error::timed_out),
          "connect failed");
    }
    pool_.claim_freed_slot();
    if (cancel_.cancelled()) {
      pool_.release_slot();  // the freed slot goes to the next waiter
      return fail(net::error::operation_aborted, "cancelled");
    }
    connect();
  }

  void connect() {
    error_code unresolved;
    conn_ = pool_.open(unresolved);
    if (!conn_) return fail(unresolved, "host not resolved");
    // The connect timeout, when it ends before the deadline (which the fan-out enforces via cancel_).
    // Runs at most once per call: a retry follows only a failed reused connection, never a new one.
    const auto limit = clock::now() + pool_.connect_timeout();
    if (limit < deadline_) {
      timer_.emplace(pool_.executor(), limit);
      timer_pending_ = true;
      timer_->async_wait([this](const error_code& ec) {
        timer_pending_ = false;
        if (!ec && connecting_) {
          connect_timed_out_ = true;
          close_socket();
        }
        if (finished_) delete this;
      });
    }
    connecting_ = true;
    hook_.emplace(cancel_, [this] { close_socket(); });
    conn_->socket.async_connect(conn_->remote, [this](error_code ec) {
      connecting_ = false;
      hook_.reset();
      if (timer_pending_) timer_->cancel();
      if (connect_timed_out_) {
        ec = net::error::timed_out;
      } else if (!ec && cancel_.cancelled()) {
        ec = net::error::operation_aborted;
      }
      if (ec) {
        pool_.discard(std::move(conn_));
        return fail(ec, ec == net::error::connection_refused ? "connect refused" : "connect failed");
      }
      error_code ignored;
      conn_->socket.set_option(net::ip::tcp::no_delay(true), ignored);
      report_input_left(conn_->socket);
      write();
    });
  }

  void close_socket() {
    error_code ignored;
    conn_->socket.close(ignored);
  }

  void exchange(handle conn) {
    if (conn->stale) {  // the downstream closed it while it was being handed over
      pool_.discard(std::move(conn));
      return attempt(false);
    }
    conn_ = std::move(conn);
    write();
  }

  void write() {
    was_reused_ = conn_->reused;
    // Closing (not just cancelling) means an operation started after the hook fired fails at once too.
    hook_.emplace(cancel_, [this] { close_socket(); });
    parser_.emplace(settings_.max_response_bytes, response_header_limit);
    conn_->buffer.clear();
    conn_->user = this;
    if (!conn_->readiness.waiting()) conn_->readiness.wait(*conn_);
    const auto sent =
        ::send(conn_->socket.native_handle(), head_.data(), head_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent == static_cast<ssize_t>(head_.size())) return;  // the answer is awaited
    if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return written(error_code(errno, boost::system::system_category()));
    }
    writing_ = true;
    net::async_write(
        conn_->socket,
        net::buffer(head_.data(), head_.size()) + static_cast<std::size_t>(std::max<ssize_t>(sent, 0)),
        [this](const error_code& ec, std::size_t) {
          writing_ = false;
          written(ec);
        });
  }

  void written(const error_code& ec) {
    if (ec) {
      hook_.reset();
      pool_.discard(std::move(conn_));
      if (was_reused_ && !cancel_.cancelled() && retryable(ec)) return attempt(false);
      return fail(ec, "write failed");
    }
    if (cancel_.cancelled()) {  // fired while the write completed: don't read
      hook_.reset();
      pool_.discard(std::move(conn_));
      return fail(net::error::operation_aborted, "cancelled");
    }
    if (std::exchange(readable_early_, false)) on_readable(error_code());
  }

  // The connection has input (or was closed under the call: `ec`). Reads until it is drained, parsing as
  // it goes; waits again when the answer is still incomplete.
  void on_readable(const error_code& ec) override {
    if (writing_) {  // an early answer (or an error) waits until the request is written
      readable_early_ = !ec;
      return;
    }
    if (ec) return read(ec);
    for (;;) {
      auto& buffer = conn_->buffer;
      const auto got = read_now(conn_->socket, buffer, 512);
      if (got.ec == net::error::would_block) return conn_->readiness.wait(*conn_);
      if (got.ec == net::error::eof) return end_of_stream();
      if (got.ec) return read(got.ec);
      error_code parse_ec;
      const auto data = buffer.data();
      buffer.consume(
          parser_->put(std::string_view(static_cast<const char*>(data.data()), data.size()), parse_ec));
      if (parse_ec && parse_ec != http::error::need_more) return read(parse_ec);
      if (!charge_body()) return read(http::error::buffer_overflow);
      if (parser_->is_done()) {
        // Bytes past the answer, or the downstream closing right behind it: the connection is not reused.
        drained_ = got.drained;
        return read(error_code());
      }
      if (buffer.size() > read_buffer_limit) return read(http::error::buffer_overflow);
      if (got.drained) return conn_->readiness.wait(*conn_);
    }
  }

  // Counts the answer's body buffer against the process's memory budget as it grows; false when the
  // budget has no room for it (the call then fails).
  bool charge_body() {
    const auto capacity = parser_->body().capacity();
    if (capacity <= charged_) return true;
    if (!memory_budget::try_charge(capacity - charged_)) {
      over_budget_ = true;
      return false;
    }
    charged_ = capacity;
    return true;
  }

  // The downstream closed the connection: the end of an answer without a length, or a failure.
  void end_of_stream() {
    if (!parser_->got_some()) return read(http::error::end_of_stream);
    error_code ec;
    parser_->put_eof(ec);
    drained_ = false;  // closed: never reused
    read(ec);
  }

  void read(const error_code& ec) {
    hook_.reset();
    if (ec) {
      const bool nothing_received = !parser_->got_some();
      pool_.discard(std::move(conn_));
      // A pooled connection the downstream closed while idle fails on first use: retry on a new one.
      if (was_reused_ && nothing_received && !cancel_.cancelled() && retryable(ec)) return attempt(false);
      return fail(ec, over_budget_                    ? "memory budget exhausted"
                      : ec == http::error::body_limit ? "body too large"
                                                      : "read failed");
    }
    const auto now = clock::now();
    call_result result;  // built only now: a call in flight does not carry one
    result.status = parser_->status();
    if (parser_->keep_alive() && drained_ && conn_->buffer.size() == 0) {
      pool_.release(std::move(conn_), now);
    } else {
      pool_.discard(std::move(conn_));
    }
    if (result.status < 200 || result.status > 299) {
      result.outcome = call_outcome::error;
      result.detail = result.status >= 500 ? "status 5xx" : "status not 2xx";
    } else if (!parse_json_object(std::move(parser_->body()), result.body)) {
      result.outcome = call_outcome::error;
      result.detail = "body not a JSON object";
    } else {
      result.outcome = call_outcome::ok;
    }
    done(std::move(result), now);
  }

  void fail(const error_code& ec, const char* what) {
    call_result result;
    mark_failed(result, cancel_, ec, what);
    done(std::move(result), clock::now());
  }

  void done(call_result&& result, clock::time_point now) {
    result.latency = now - started_;
    // The body now belongs to the result, which the fan-out counts until the answer is merged.
    memory_budget::release(std::exchange(charged_, 0));
    auto& sink = sink_;
    const auto index = index_;
    if (timer_pending_) {  // its handler, due at once, deletes the call
      finished_ = true;
      timer_->cancel();
    } else {
      delete this;
    }
    sink.call_finished(index, std::move(result));
  }

  const downstream_settings& settings_;
  connection_pool& pool_;
  call_sink& sink_;
  std::size_t index_;
  cancel_source& cancel_;
  clock::time_point deadline_;
  clock::time_point started_;
  std::string_view head_;  // in head_inline_, or head_long_ when it does not fit
  std::string head_long_;
  char head_inline_[256];
  handle conn_;
  bool was_reused_ = false;
  bool writing_ = false;         // the part of the request `send` did not take is being written
  bool readable_early_ = false;  // input arrived while writing_
  bool drained_ = false;         // nothing more was waiting after the answer's last read
  bool connecting_ = false;
  bool connect_timed_out_ = false;
  bool timer_pending_ = false;  // the connect timer's handler has yet to run
  bool finished_ = false;       // reported; the connect timer's handler deletes the call
  bool over_budget_ = false;    // the answer did not fit in the memory budget
  std::size_t charged_ = 0;     // bytes of the body buffer counted against the memory budget
  std::optional<cancel_source::scoped_hook> hook_;
  std::optional<net::steady_timer> timer_;
  connection_pool::waiter waiter_;
  std::optional<response_parser> parser_;
};

bool http_downstream::start(const call_request& request, call_sink& sink, std::size_t index) {
  (new http_call(*this, *pools_.at(request.worker), request, sink, index))->attempt(true);
  return true;
}

}  // namespace gateway
