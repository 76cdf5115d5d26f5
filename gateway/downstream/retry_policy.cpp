#include "gateway/downstream/retry_policy.hpp"

#include <boost/asio/error.hpp>
#include <boost/beast/http/error.hpp>

namespace gateway {

bool retry_on_new_connection(const failed_exchange& failure) {
  namespace http = boost::beast::http;
  namespace net = boost::asio;
  if (!failure.reused || failure.answer_started || failure.cancelled) return false;
  const auto& ec = failure.ec;
  return ec == http::error::end_of_stream || ec == net::error::connection_reset || ec == net::error::eof ||
         ec == net::error::broken_pipe || ec == http::error::partial_message;
}

}  // namespace gateway
