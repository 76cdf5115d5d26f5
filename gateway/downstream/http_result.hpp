#pragma once
// The result an HTTP call reports, without its latency (the call adds it): from a complete answer, ok only
// for a 2xx status whose body is a JSON object (decoded first when it came in a content coding); or from
// a failure, where the caller's cancellation wins over the error it caused. Pure.

#include "gateway/codec/content_coding.hpp"
#include "gateway/config/config.hpp"
#include "gateway/downstream/call_result.hpp"

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <string>

namespace gateway {

// `fresh_for`: how long the answer may be served from a cache (Cache-Control), 0 for not at all.
call_result answer_result(unsigned status, std::string&& body, std::uint32_t fresh_for = 0);

// Decodes `body`, received in `coding` (not identity), in place, never to more than `max_bytes`: nullptr
// when done, else why not (a static string for call_result::detail): an unknown coding, a corrupt
// stream, or one that decodes beyond the bound (a zip bomb), which stops the decoding there.
const char* decode_body(content_coding coding, std::string& body, std::size_t max_bytes);

// decode_body()'s reason when the decoded body would exceed its bound.
inline constexpr const char* decoded_too_large = "decoded body too large";

// An answer whose status the call passes to the client (call_request::pass): an error of its status's
// kind, as for any status that is not 2xx, that keeps the body when it is a JSON object (else body.text
// stays empty) for the client's answer.
call_result passed_answer(unsigned status, std::string&& body);

// Whether `result` is an answer whose status `pass` lists (made by passed_answer(): only a call that
// passes statuses keeps such an answer's body and fields).
bool is_passed_answer(const passed_answer_policy& pass, const call_result& result);

// A 2xx answer whose body could not be used before it was judged (`why`: from decode_body), a failure of
// kind `kind`.
call_result unusable_answer(unsigned status, const char* why, call_error kind);

call_result failure_result(const boost::system::error_code& ec, const char* what, bool cancelled);

// The kind of error a failed read, write, connect or handshake was (refused, reset, too_large, tls or
// other); a timeout or a cancel is judged by the caller.
call_error error_kind(const boost::system::error_code& ec);

}  // namespace gateway
