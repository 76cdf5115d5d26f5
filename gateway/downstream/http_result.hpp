#pragma once
// The result an HTTP call reports, without its latency (the call adds it): from a complete answer, ok only
// for a 2xx status whose body is a JSON object; or from a failure, where the caller's cancellation wins
// over the error it caused. Pure.

#include "gateway/downstream/call_result.hpp"

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <string>

namespace gateway {

// `fresh_for`: how long the answer may be served from a cache (Cache-Control), 0 for not at all.
call_result answer_result(unsigned status, std::string&& body, std::uint32_t fresh_for = 0);

call_result failure_result(const boost::system::error_code& ec, const char* what, bool cancelled);

}  // namespace gateway
