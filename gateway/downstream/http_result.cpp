#include "gateway/downstream/http_result.hpp"

#include "gateway/core/compression.hpp"

#include <boost/asio/error.hpp>

#include <utility>

namespace gateway {

call_result answer_result(unsigned status, std::string&& body, std::uint32_t fresh_for) {
  call_result result;
  result.status = status;
  result.fresh_for = fresh_for;
  if (status < 200 || status > 299) {
    result.outcome = call_outcome::error;
    result.detail = status >= 500 ? "status 5xx" : "status not 2xx";
  } else if (!parse_json_object(std::move(body), result.body)) {
    result.outcome = call_outcome::error;
    result.detail = "body not a JSON object";
  } else {
    result.outcome = call_outcome::ok;
  }
  return result;
}

const char* decode_body(content_coding coding, std::string& body, std::size_t max_bytes) {
  if (coding == content_coding::unknown) return "unknown content coding";
  std::string decoded;
  switch (inflate_bounded(body, coding, max_bytes, decoded)) {
    case inflate_status::ok:
      body = std::move(decoded);
      return nullptr;
    case inflate_status::too_large:
      return "decoded body too large";
    case inflate_status::corrupt:
      return coding == content_coding::gzip ? "corrupt gzip body" : "corrupt deflate body";
    case inflate_status::no_memory:
      break;
  }
  return "out of memory decoding the body";
}

call_result unusable_answer(unsigned status, const char* why) {
  call_result result;
  result.status = status;
  result.outcome = call_outcome::error;
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
  }
  return result;
}

}  // namespace gateway
