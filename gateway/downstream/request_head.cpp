#include "gateway/downstream/request_head.hpp"

#include <charconv>
#include <cstring>
#include <string_view>

namespace gateway {

namespace {

constexpr std::string_view request_id_field = "\r\nX-Request-Id: ";
constexpr std::string_view traceparent_field = "\r\ntraceparent: ";
constexpr std::string_view head_end = "\r\n\r\n";
constexpr std::string_view body_fields = "\r\nContent-Type: application/json\r\nContent-Length: ";

// A method whose requests carry content: the length goes with them, 0 included (RFC 9110 8.6).
bool has_content(const call_request& request) {
  return !request.body.empty() || request.method == "POST" || request.method == "PUT" ||
         request.method == "PATCH";
}
constexpr std::size_t millis_digits = 20;  // the most a 64-bit count of milliseconds takes

char* put(char* out, std::string_view s) {
  if (s.empty()) return out;  // an empty view may hold no pointer, which memcpy must not get
  std::memcpy(out, s.data(), s.size());
  return out + s.size();
}

std::size_t decimal_size(long long v) {
  std::size_t n = 1;
  for (; v >= 10; v /= 10) ++n;
  return n;
}

}  // namespace

std::string host_field_value(const downstream_settings& settings) {
  // RFC 9110 7.2 / RFC 3986 3.2.2: an IPv6 literal is written in brackets.
  const bool ipv6_literal = settings.host.find(':') != std::string::npos;
  const auto name = ipv6_literal ? "[" + settings.host + "]" : settings.host;
  const std::uint16_t default_port = settings.tls.enabled ? 443 : 80;
  return settings.port == default_port ? name : name + ":" + std::to_string(settings.port);
}

request_head::request_head(const downstream_settings& settings) {
  const auto host = host_field_value(settings);
  prefix_ = " " + settings.base_path;
  middle_ = " HTTP/1.1\r\nHost: " + host + "\r\nAccept: application/json\r\n";
  if (settings.compressed) middle_ += "Accept-Encoding: gzip, deflate\r\n";
  middle_ += "X-Request-Timeout-Ms: ";
}

std::size_t request_head::size(const call_request& request) const {
  std::size_t n = request.method.size() + prefix_.size() + request.target.size() + middle_.size() +
                  decimal_size(millis_left(request.deadline, request.now)) + request_id_field.size() +
                  request.request_id.size() + head_end.size();
  if (!request.traceparent.empty()) n += traceparent_field.size() + request.traceparent.size();
  if (has_content(request))
    n += body_fields.size() + decimal_size(static_cast<long long>(request.body.size())) + request.body.size();
  return n + request.headers.size();
}

std::size_t request_head::write(const call_request& request, char* out) const {
  char* const start = out;
  std::size_t traceparent_at = no_traceparent;
  char millis[millis_digits];
  const auto left =
      std::to_chars(millis, millis + sizeof millis, millis_left(request.deadline, request.now)).ptr;
  out = put(out, request.method);
  out = put(out, prefix_);
  out = put(out, request.target);
  out = put(out, middle_);
  out = put(out, std::string_view(millis, static_cast<std::size_t>(left - millis)));
  out = put(out, request_id_field);
  out = put(out, request.request_id);
  if (!request.traceparent.empty()) {
    out = put(out, traceparent_field);
    traceparent_at = static_cast<std::size_t>(out - start);
    out = put(out, request.traceparent);
  }
  out = put(out, request.headers);
  if (has_content(request)) {
    char length[millis_digits];
    const auto end = std::to_chars(length, length + sizeof length, request.body.size()).ptr;
    out = put(out, body_fields);
    out = put(out, std::string_view(length, static_cast<std::size_t>(end - length)));
  }
  out = put(out, head_end);
  put(out, request.body);
  return traceparent_at;
}

}  // namespace gateway
