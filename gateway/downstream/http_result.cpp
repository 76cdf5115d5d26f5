#include "gateway/downstream/http_result.hpp"

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
