#include "gateway/downstream/http_result.hpp"

#include "gateway/codec/compression.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/http/error.hpp>

#include <utility>

namespace gateway {

call_result answer_result(unsigned status, std::string&& body, std::uint32_t fresh_for) {
  call_result result;
  result.status = status;
  result.fresh_for = fresh_for;
  if (status < 200 || status > 299) {
    result.outcome = call_outcome::error;
    result.error = status >= 400 && status < 500 ? call_error::status_4xx : call_error::status_5xx;
    result.detail = status >= 500 ? "status 5xx" : "status not 2xx";  // failure_detail() names the status
  } else if (!parse_json_object(std::move(body), result.body)) {
    result.outcome = call_outcome::error;
    result.error = call_error::invalid_body;
    result.detail = "body not a JSON object";
  } else {
    result.outcome = call_outcome::ok;
  }
  return result;
}

call_result passed_answer(unsigned status, std::string&& body) {
  auto result = answer_result(status, std::string());
  if (!parse_json_object(std::move(body), result.body)) result.body = json_object_text{};
  result.detail = "status passed";
  return result;
}

bool is_passed_answer(const passed_answer_policy& pass, const call_result& result) {
  return result.outcome == call_outcome::error &&
         (result.error == call_error::status_4xx || result.error == call_error::status_5xx) &&
         pass.passes(result.status);
}

const char* decode_body(content_coding coding, std::string& body, std::size_t max_bytes) {
  if (coding == content_coding::unknown) return "unknown content coding";
  std::string decoded;
  switch (inflate_bounded(body, coding, max_bytes, decoded)) {
    case inflate_status::ok:
      body = std::move(decoded);
      return nullptr;
    case inflate_status::too_large:
      return decoded_too_large;
    case inflate_status::corrupt:
      return coding == content_coding::gzip ? "corrupt gzip body" : "corrupt deflate body";
    case inflate_status::no_memory:
      break;
  }
  return "out of memory decoding the body";
}

call_result unusable_answer(unsigned status, const char* why, call_error kind) {
  call_result result;
  result.status = status;
  result.outcome = call_outcome::error;
  result.error = kind;
  result.detail = why;
  return result;
}

call_result failure_result(const boost::system::error_code& ec, const char* what, bool cancelled) {
  call_result result;
  if (cancelled) {
    result.outcome = call_outcome::cancelled;
    result.detail = "cancelled";
  } else if (ec == boost::asio::error::timed_out) {
    result.outcome = call_outcome::timeout;
    result.detail = "timeout";
  } else {
    result.outcome = call_outcome::error;
    result.detail = what;
    result.error = error_kind(ec);
  }
  return result;
}

call_error error_kind(const boost::system::error_code& ec) {
  namespace error = boost::asio::error;
  if (ec == error::connection_refused) return call_error::refused;
  if (ec == error::connection_reset || ec == error::eof || ec == error::broken_pipe ||
      ec == boost::beast::http::error::end_of_stream || ec == boost::beast::http::error::partial_message)
    return call_error::reset;
  if (ec == boost::beast::http::error::body_limit || ec == boost::beast::http::error::buffer_overflow ||
      ec == boost::beast::http::error::header_limit)
    return call_error::too_large;
  if (ec.category() == boost::asio::error::get_ssl_category()) return call_error::tls;
  return call_error::other;
}

}  // namespace gateway
