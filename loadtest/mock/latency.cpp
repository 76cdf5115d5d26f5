#include "loadtest/mock/latency.hpp"

#include "gateway/runtime/duration.hpp"

namespace mock {
namespace {

// "98" or "99.9" (at most two integer digits and four decimals) in millionths; nullopt otherwise.
std::optional<std::uint32_t> parse_percentile(std::string_view text) {
  const auto dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view fraction = dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
  if (whole.empty() || whole.size() > 2) return std::nullopt;
  if (dot != std::string_view::npos && (fraction.empty() || fraction.size() > 4)) return std::nullopt;
  std::uint32_t value = 0;
  for (const char c : whole) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint32_t>(c - '0');
  }
  std::uint32_t scale = 10'000;  // millionths per percent
  for (const char c : fraction) {
    if (c < '0' || c > '9') return std::nullopt;
    scale /= 10;
    value = value * 10 + static_cast<std::uint32_t>(c - '0');
  }
  value *= scale;
  if (value == 0 || value >= latency::draws) return std::nullopt;
  return value;
}

std::string quoted(std::string_view text) {
  return "'" + std::string(text) + "'";
}

}  // namespace

microseconds latency::pick(std::uint32_t draw) const {
  microseconds delay = base;
  for (std::size_t i = 0; i < tail_size && draw >= tail[i].from; ++i) delay = tail[i].delay;
  return delay;
}

std::optional<latency> parse_latency(std::string_view text, std::string& error) {
  latency result;
  const auto comma = text.find(',');
  const std::string_view base = text.substr(0, comma);
  const auto base_delay = gateway::parse_duration(base);
  if (!base_delay) {
    error = "bad duration " + quoted(base) + " (<digits>us|ms|s|m)";
    return std::nullopt;
  }
  result.base = *base_delay;
  std::string_view rest = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
  if (comma != std::string_view::npos && rest.empty()) {
    error = "a tail term is missing after the last ','";
    return std::nullopt;
  }
  while (!rest.empty()) {
    const auto next = rest.find(',');
    const std::string_view term = rest.substr(0, next);
    rest = next == std::string_view::npos ? std::string_view{} : rest.substr(next + 1);
    if (next != std::string_view::npos && rest.empty()) {
      error = "a tail term is missing after the last ','";
      return std::nullopt;
    }
    const auto eq = term.find('=');
    if (!term.starts_with('p') || eq == std::string_view::npos) {
      error = "bad tail term " + quoted(term) + " (pPERCENTILE=DURATION, e.g. p98=700ms)";
      return std::nullopt;
    }
    const auto from = parse_percentile(term.substr(1, eq - 1));
    if (!from) {
      error = "bad percentile " + quoted(term.substr(0, eq)) +
              " (above 0 and below 100, at most four decimals, e.g. p98 or p99.9)";
      return std::nullopt;
    }
    const auto delay = gateway::parse_duration(term.substr(eq + 1));
    if (!delay) {
      error = "bad duration " + quoted(term.substr(eq + 1)) + " in " + quoted(term);
      return std::nullopt;
    }
    if (result.tail_size == latency::max_tail) {
      error = "at most " + std::to_string(latency::max_tail) + " tail terms";
      return std::nullopt;
    }
    const bool first = result.tail_size == 0;
    if (!first && *from <= result.tail[result.tail_size - 1].from) {
      error = "percentiles must increase from term to term (" + quoted(term) + ")";
      return std::nullopt;
    }
    if (*delay < (first ? result.base : result.tail[result.tail_size - 1].delay)) {
      error = "a tail delay is shorter than the delay before it (" + quoted(term) + ")";
      return std::nullopt;
    }
    result.tail[result.tail_size++] = {*from, *delay};
  }
  return result;
}

std::uint64_t draw_generator::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t path_seed(std::uint64_t seed, std::string_view name) {
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a-64 of the name
  for (const char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return draw_generator(seed ^ h).next();
}

}  // namespace mock
