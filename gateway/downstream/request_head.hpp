#pragma once
// The head of a downstream request, and its body when it has one (Content-Type: application/json and
// Content-Length, also 0 for a POST, PUT or PATCH without one): the request line, Host, Accept,
// Accept-Encoding (when the downstream is `compressed`), X-Request-Timeout-Ms (the time left until the call's
// deadline), X-Request-Id, when the client sent one, traceparent, and the call's own header fields
// (call_request::headers: the header policy's, the forwarded ones). The parts fixed by the downstream's
// settings are built once; a call's parts are written straight into its own buffer, without an
// allocation. Pure: no I/O.

#include "gateway/config/config.hpp"
#include "gateway/downstream/downstream.hpp"

#include <cstddef>
#include <string>

namespace gateway {

// The Host field's value for a downstream: its host (an IPv6 literal in brackets), with the port unless
// it is the scheme's default.
std::string host_field_value(const downstream_settings& settings);

class request_head {
 public:
  explicit request_head(const downstream_settings& settings);

  // write() writes exactly size() bytes at `out`: the head, then the body. It returns where the
  // traceparent's value starts in them (an attempt of a traced call writes its own there), or
  // no_traceparent when the request has none.
  static constexpr std::size_t no_traceparent = static_cast<std::size_t>(-1);
  std::size_t size(const call_request& request) const;
  std::size_t write(const call_request& request, char* out) const;

 private:
  std::string prefix_;  // "GET " and the base path
  std::string middle_;  // from the version through the Host and Accept fields to the timeout's name
};

}  // namespace gateway
