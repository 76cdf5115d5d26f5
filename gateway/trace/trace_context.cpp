#include "gateway/trace/trace_context.hpp"

#include "gateway/codec/char_class.hpp"
#include "gateway/runtime/thread_random.hpp"

#include <cmath>

namespace gateway {

namespace {

template <std::size_t N>
void fill_random(std::array<std::uint8_t, N>& id) {
  do {
    for (std::size_t i = 0; i < N; i += 8) {
      std::uint64_t bits = thread_random();
      for (std::size_t j = i; j < i + 8 && j < N; ++j, bits >>= 8) id[j] = static_cast<std::uint8_t>(bits);
    }
  } while (is_zero(id));
}

constexpr char hex_digits[] = "0123456789abcdef";

template <std::size_t N>
char* put_hex(char* out, const std::array<std::uint8_t, N>& id) {
  for (auto b : id) {
    *out++ = hex_digits[b >> 4];
    *out++ = hex_digits[b & 0x0f];
  }
  return out;
}

template <std::size_t N>
std::string hex_string(const std::array<std::uint8_t, N>& id) {
  std::string s(2 * N, '0');
  put_hex(s.data(), id);
  return s;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // uppercase is not allowed by trace context
}

// Reads 2 * N lowercase hex digits into `out`; false on any other character.
template <std::size_t N>
bool read_hex(std::string_view text, std::array<std::uint8_t, N>& out) {
  for (std::size_t i = 0; i < N; ++i) {
    const int hi = hex_value(text[2 * i]);
    const int lo = hex_value(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return true;
}

constexpr std::size_t traceparent_size = 55;  // "vv-" 32 "-" 16 "-ff"
constexpr std::size_t tracestate_max = 512;

}  // namespace

trace_id new_trace_id() {
  trace_id id;
  fill_random(id);
  return id;
}

span_id new_span_id() {
  span_id id;
  fill_random(id);
  return id;
}

std::string to_hex(const trace_id& id) {
  return hex_string(id);
}
std::string to_hex(const span_id& id) {
  return hex_string(id);
}

std::optional<traceparent> parse_traceparent(std::string_view value) {
  if (value.size() < traceparent_size || value[2] != '-' || value[35] != '-' || value[52] != '-') {
    return std::nullopt;
  }
  std::array<std::uint8_t, 1> version{};
  std::array<std::uint8_t, 1> flags{};
  traceparent parsed;
  if (!read_hex(value.substr(0, 2), version) || !read_hex(value.substr(3, 32), parsed.trace) ||
      !read_hex(value.substr(36, 16), parsed.parent) || !read_hex(value.substr(53, 2), flags)) {
    return std::nullopt;
  }
  if (version[0] == 0xff) return std::nullopt;
  if (value.size() > traceparent_size && (version[0] == 0 || value[traceparent_size] != '-'))
    return std::nullopt;
  if (is_zero(parsed.trace) || is_zero(parsed.parent)) return std::nullopt;
  parsed.flags = flags[0];
  return parsed;
}

traceparent_text format_traceparent(const trace_id& trace, const span_id& span, bool sampled) {
  traceparent_text text;
  char* out = text.chars.data();
  *out++ = '0';
  *out++ = '0';
  *out++ = '-';
  out = put_hex(out, trace);
  *out++ = '-';
  out = put_hex(out, span);
  *out++ = '-';
  *out++ = '0';
  *out = sampled ? '1' : '0';
  return text;
}

std::string_view accepted_tracestate(std::string_view value) {
  if (value.size() > tracestate_max) return {};
  // List members are printable ASCII; commas, spaces and tabs separate them.
  static constexpr char_class::chars allowed([](char c) { return c == '\t' || (c >= 0x20 && c < 0x7f); });
  return char_class::all_of(value, allowed) ? value : std::string_view();
}

bool head_sampled(const std::optional<traceparent>& parent, const trace_id& trace, double ratio) {
  if (parent) return parent->sampled();
  if (!(ratio > 0)) return false;
  if (ratio >= 1) return true;
  std::uint64_t random_part = 0;
  for (std::size_t i = trace.size() - 7; i < trace.size(); ++i) random_part = random_part << 8 | trace[i];
  // ratio * 2^56 is exact in a double (a power-of-two scaling) and below 2^56, so the cast cannot overflow.
  const auto threshold = static_cast<std::uint64_t>(std::ldexp(ratio, 56));
  return random_part < threshold;
}

}  // namespace gateway
