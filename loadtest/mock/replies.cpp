#include "loadtest/mock/replies.hpp"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdint>

namespace mock {
namespace {

std::string_view reason_phrase(unsigned status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 500:
      return "Internal Server Error";
    default:
      return "Unknown";
  }
}

void append_number(std::string& out, std::uint64_t value) {
  char digits[24];
  const auto result = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, result.ptr);
}

std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool percent_decode(std::string_view in, std::string& out) {
  out.clear();
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = hex_value(in[i + 1]);
    const int lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

}  // namespace

void append_head(std::string& out, unsigned status, std::size_t content_length, bool keep_alive,
                 std::string_view content_type) {
  out += "HTTP/1.1 ";
  append_number(out, status);
  out += ' ';
  out += reason_phrase(status);
  out += "\r\nContent-Type: ";
  out += content_type;
  out += "\r\nContent-Length: ";
  append_number(out, content_length);
  out += keep_alive ? "\r\nConnection: keep-alive\r\n\r\n" : "\r\nConnection: close\r\n\r\n";
}

void append_ok_body(std::string& out, std::string_view name, std::string_view sku) {
  const std::uint64_t h = fnv1a(sku);
  out += R"({"source":")";
  out += name;
  out += R"(","sku":)";
  append_json_string(out, sku);
  out += R"(,"priceCent":)";
  append_number(out, 100 + h % 99900);
  out += R"(,"stock":)";
  append_number(out, h % 1000);
  out += '}';
}

void append_json_string(std::string& out, std::string_view text) {
  bool plain = true;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f || c == '"' || c == '\\') {
      plain = false;
      break;
    }
  }
  if (plain) {
    out += '"';
    out += text;
    out += '"';
    return;
  }
  out += nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string padded_object(std::size_t size) {
  constexpr std::string_view prefix = R"({"pad":")";
  constexpr std::string_view suffix = R"("})";
  std::string out(prefix);
  out.append(size - prefix.size() - suffix.size(), 'x');
  out += suffix;
  return out;
}

const std::string& big_body() {
  static const std::string body = padded_object(2 * 1024 * 1024);
  return body;
}

query_value find_query_param(std::string_view query, std::string_view key) {
  query_value result;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    const auto eq = pair.find('=');
    if (pair.substr(0, eq) != key) continue;
    result.present = true;
    const std::string_view raw = eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
    result.malformed = !percent_decode(raw, result.value);
    return result;
  }
  return result;
}

}  // namespace mock
