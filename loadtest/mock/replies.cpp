#include "loadtest/mock/replies.hpp"

#include "gateway/codec/http_text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>

namespace mock {
namespace {

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

}  // namespace

namespace {
std::string& cache_control() {
  static std::string value;
  return value;
}
}  // namespace

void set_cache_control(std::string value) {
  cache_control() = std::move(value);
}

void append_head(std::string& out, unsigned status, std::size_t content_length, bool keep_alive,
                 std::string_view content_type, std::string_view content_encoding, std::string_view extra) {
  out += "HTTP/1.1 ";
  append_number(out, status);
  out += ' ';
  out += gateway::reason_phrase(status);
  out += "\r\nContent-Type: ";
  out += content_type;
  out += "\r\nContent-Length: ";
  append_number(out, content_length);
  if (!content_encoding.empty()) {
    out += "\r\nContent-Encoding: ";
    out += content_encoding;
  }
  if (!cache_control().empty()) {
    out += "\r\nCache-Control: ";
    out += cache_control();
  }
  out += keep_alive ? "\r\nConnection: keep-alive\r\n" : "\r\nConnection: close\r\n";
  out += extra;
  out += "\r\n";
}

void append_ok_body(std::string& out, std::string_view name, std::string_view sku, std::string_view query) {
  const std::uint64_t h = fnv1a(sku);
  out += R"({"source":")";
  out += name;
  out += R"(","sku":)";
  append_json_string(out, sku);
  out += R"(,"priceCent":)";
  append_number(out, 100 + h % 99900);
  out += R"(,"stock":)";
  append_number(out, h % 1000);
  if (!query.empty() && has_other_params(query, "sku")) {
    out += R"(,"query":)";
    append_query_object(out, query, "sku");
  }
  out += '}';
}

bool append_items_body(std::string& out, std::string_view name, std::string_view query) {
  std::size_t count = default_items;
  if (const auto param = find_query_param(query, "count"); param.present) {
    const auto& text = param.value;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
    if (param.malformed || ec != std::errc{} || end != text.data() + text.size() || count > max_items) {
      out += R"({"error":"bad count: give 0 to 10000"})";
      return false;
    }
  }
  out += R"({"source":")";
  out += name;
  out += R"(","count":)";
  append_number(out, count);
  out += R"(,"items":[)";
  for (std::size_t i = 0; i < count; ++i) {
    out += i == 0 ? R"({"id":")" : R"(,{"id":")";
    out += name;
    out += '-';
    append_number(out, i);
    out += R"(","n":)";
    append_number(out, i);
    out += '}';
  }
  out += "]}";
  return true;
}

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  append_json_escaped(out, text);
  out += '"';
}

void append_json_escaped(std::string& out, std::string_view text) {
  const bool plain = std::all_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x7f && c != '"' && c != '\\';
  });
  if (plain) {
    out += text;
    return;
  }
  const auto quoted =
      nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out.append(quoted, 1, quoted.size() - 2);
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
  for_each_query_param(query, [&](std::string_view name, std::string_view raw) {
    if (name != key) return false;
    result.present = true;
    result.raw = raw;
    result.malformed = !gateway::percent_decode(raw, result.value, false);
    return true;
  });
  return result;
}

bool has_other_params(std::string_view query, std::string_view key) {
  bool found = false;
  for_each_query_param(query, [&](std::string_view name, std::string_view) {
    found = name != key;
    return found;
  });
  return found;
}

void append_query_object(std::string& out, std::string_view query, std::string_view key) {
  const auto decoded = [](std::string_view raw) {
    std::string text;
    return gateway::percent_decode(raw, text, false) ? text : std::string(raw);
  };
  nlohmann::json object = nlohmann::json::object();
  for_each_query_param(query, [&](std::string_view name, std::string_view value) {
    if (name == key) return false;
    object.emplace(decoded(name), decoded(value));  // keeps the first of repeated keys
    return false;
  });
  out += object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace mock
