#include "gateway/server/response_head.hpp"

#include "gateway/codec/http_text.hpp"

#include <charconv>

namespace gateway {
namespace {

void append_number(std::string& out, std::size_t n) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
  out.append(digits, end);
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
  out.append(name).append(": ").append(value).append("\r\n");
}

}  // namespace

std::string serialize(const response_head& h) {
  std::string out;
  out.reserve(240 + h.content_type.size() + h.content_encoding.size() + h.request_id.size() +
              h.degraded.size() + h.allow.size() + h.fields.size());
  out.append("HTTP/1.1 ");
  append_number(out, h.status);
  out.append(" ").append(reason_phrase(h.status)).append("\r\n");
  if (h.status != 204) {
    append_field(out, "Content-Type", h.content_type);
    if (!h.content_encoding.empty()) append_field(out, "Content-Encoding", h.content_encoding);
    out.append("Content-Length: ");
    append_number(out, h.content_length);
    out.append("\r\n");
  }
  if (!h.request_id.empty()) append_field(out, "X-Request-Id", h.request_id);
  if (!h.degraded.empty()) append_field(out, "X-Degraded", h.degraded);
  if (h.vary_accept_encoding) append_field(out, "Vary", "Accept-Encoding");
  if (h.no_store) append_field(out, "Cache-Control", "no-store");
  if (!h.allow.empty()) append_field(out, "Allow", h.allow);
  if (h.retry_after) append_field(out, "Retry-After", "1");
  if (!h.keep_alive) append_field(out, "Connection", "close");
  out.append(h.fields);
  out.append("\r\n");
  return out;
}

}  // namespace gateway
