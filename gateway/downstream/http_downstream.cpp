#include "gateway/downstream/http_downstream.hpp"

#include "gateway/downstream/connection_pool.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

#include <optional>
#include <stdexcept>

namespace gateway {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;

namespace {

constexpr std::size_t response_header_limit = 16 * 1024;

// Marks the result of a failed exchange: the parent's cancellation wins over the error it caused.
void fail(call_result& r, const cancel_source& cancel, const error_code& ec, const char* what) {
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
  host_header_ =
      settings_.port == 80 ? settings_.host : settings_.host + ":" + std::to_string(settings_.port);
  const std::size_t per_worker =
      std::max<std::size_t>(1, settings_.max_connections / std::max<std::size_t>(1, workers.size()));
  for (auto* ioc : workers) {
    pools_.push_back(std::make_unique<connection_pool>(ioc->get_executor(), address, per_worker,
                                                       settings_.connect_timeout, settings_.idle_timeout));
  }
}

http_downstream::~http_downstream() = default;

void http_downstream::close_idle(std::size_t worker) {
  pools_.at(worker)->close_idle();
}

std::string http_downstream::build_head(const call_request& request) const {
  std::string head;
  head.reserve(160 + settings_.base_path.size() + request.target.size() + request.traceparent.size());
  head.append("GET ").append(settings_.base_path).append(request.target).append(" HTTP/1.1\r\nHost: ");
  head.append(host_header_).append("\r\nAccept: application/json\r\nX-Request-Timeout-Ms: ");
  head.append(std::to_string(millis_left(request.deadline)))
      .append("\r\nX-Request-Id: ")
      .append(request.request_id);
  if (!request.traceparent.empty()) head.append("\r\ntraceparent: ").append(request.traceparent);
  head.append("\r\n\r\n");
  return head;
}

call_result http_downstream::call(const call_request& request, net::yield_context yield) {
  const auto started = clock::now();
  call_result result;
  connection_pool& pool = *pools_.at(request.worker);
  // A pooled connection the downstream closed while idle fails on first use; retry once on a new one.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (exchange(pool, request, attempt == 0, result, yield) == exchange_status::done) break;
  }
  result.latency = clock::now() - started;
  return result;
}

http_downstream::exchange_status http_downstream::exchange(connection_pool& pool, const call_request& request,
                                                           bool reused_allowed, call_result& result,
                                                           net::yield_context yield) {
  cancel_source& cancel = *request.cancel;
  auto acquired = pool.acquire(request.deadline, cancel, !reused_allowed, yield);
  if (!acquired.conn) {
    const auto& ec = acquired.error;
    fail(result, cancel, ec,
         ec == net::error::connection_refused ? "connect refused"
         : ec == net::error::host_not_found   ? "host not resolved"
                                              : "connect failed");
    return exchange_status::done;
  }
  auto conn = std::move(acquired.conn);
  const bool was_reused = conn->reused;
  // Plain socket operations, no per-operation timers: the fan-out cancels the call at its deadline.
  auto& socket = conn->stream.socket();
  std::optional<cancel_source::scoped_hook> hook;
  // Closing (not just cancelling) means an operation started after the hook fired fails at once too.
  hook.emplace(cancel, [&socket] {
    error_code ignored;
    socket.close(ignored);
  });

  error_code ec;
  const std::string head = build_head(request);
  net::async_write(socket, net::buffer(head), yield[ec]);
  if (ec) {
    hook.reset();
    pool.discard(std::move(conn));
    if (was_reused && !cancel.cancelled() && retryable(ec)) return exchange_status::retry_on_fresh;
    fail(result, cancel, ec, "write failed");
    return exchange_status::done;
  }

  if (cancel.cancelled()) {  // fired while the write completed: don't start the read
    hook.reset();
    pool.discard(std::move(conn));
    fail(result, cancel, net::error::operation_aborted, "cancelled");
    return exchange_status::done;
  }

  http::response_parser<http::string_body> parser;
  parser.header_limit(response_header_limit);
  parser.body_limit(settings_.max_response_bytes);
  conn->buffer.clear();
  http::async_read(socket, conn->buffer, parser, yield[ec]);
  if (ec) {
    const bool nothing_received = !parser.got_some();
    hook.reset();
    pool.discard(std::move(conn));
    if (was_reused && nothing_received && !cancel.cancelled() && retryable(ec)) {
      return exchange_status::retry_on_fresh;
    }
    fail(result, cancel, ec, ec == http::error::body_limit ? "body too large" : "read failed");
    return exchange_status::done;
  }

  hook.reset();
  auto& response = parser.get();
  result.status = response.result_int();
  if (response.keep_alive() && conn->buffer.size() == 0) {
    pool.release(std::move(conn));
  } else {
    pool.discard(std::move(conn));
  }
  if (result.status < 200 || result.status > 299) {
    result.outcome = call_outcome::error;
    result.detail = result.status >= 500 ? "status 5xx" : "status not 2xx";
    return exchange_status::done;
  }
  if (!parse_json_object(std::move(response.body()), result.body)) {
    result.outcome = call_outcome::error;
    result.detail = "body not a JSON object";
    return exchange_status::done;
  }
  result.outcome = call_outcome::ok;
  return exchange_status::done;
}

}  // namespace gateway
